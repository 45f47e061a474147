import type { Database } from '@gateway/db';
import type { Logger } from '@gateway/logger';
import type { HostResolver } from '@gateway/address-policy';
import { createAdminTokensService } from './tenancy/domain/admin-tokens-service.ts';
import { createAuditService } from './platform/domain/audit-service.ts';
import { createBalanceService } from './billing/domain/balance-service.ts';
import type { ConfigPublisher } from './common/domain/config-publisher.ts';
import type { CredentialCipher } from './common/domain/credential-cipher.ts';
import { catalogSettingsFrom } from './catalog/catalog-settings.ts';
import { createGatewayModelsService } from './catalog/domain/gateway-models-service.ts';
import type { LedgerPort } from './common/domain/ledger-port.ts';
import { createModelAliasesService } from './catalog/domain/model-aliases-service.ts';
import { createOrganisationModelsService } from './catalog/domain/organisation-models.ts';
import { createUpstreamDeploymentsService } from './catalog/domain/upstream-deployments-service.ts';
import { createOrganisationsService } from './tenancy/domain/organisations-service.ts';
import { createProjectBudgetsService } from './tenancy/domain/project-budgets-service.ts';
import { createProjectsService } from './tenancy/domain/projects-service.ts';
import { tenancySettingsFrom } from './tenancy/tenancy-settings.ts';
import { createResourceAccess } from './common/domain/resource-access.ts';
import { createUsageService } from './platform/domain/usage-service.ts';
import { createRequestLogService } from './platform/domain/request-log-service.ts';
import { createOverviewService } from './platform/domain/overview-service.ts';
import type { AdminConfig } from './config.ts';
import { createAlertsService } from './alerts/domain/alerts-service.ts';
import { alertsSettingsFrom } from './alerts/alerts-settings.ts';
import { createAnalyticsService } from './platform/domain/analytics-service.ts';
import type { LiveEvents } from './common/domain/live-events.ts';
import { createPeopleService } from './people/domain/people-service.ts';
import { peopleSettingsFrom, smtpSettingsFrom } from './people/people-settings.ts';
import { createMailer } from './people/transport/smtp-mailer.ts';
import { createInvoicesService } from './invoicing/domain/invoices-service.ts';
import type { PaymentProvider } from './billing/domain/payment-provider.ts';
import type { TopUpCause } from './billing/domain/topup-state.ts';
import { createPaymentReversalsService } from './billing/domain/refund-events.ts';
import { createRefundsService } from './billing/domain/refunds-service.ts';
import type { UnmatchedSource } from './billing/domain/unmatched-payments.ts';
import { createTopUpsService } from './billing/domain/topups-service.ts';
import { billingSettingsFrom } from './billing/billing-settings.ts';
import { invoicingSettingsFrom } from './invoicing/invoicing-settings.ts';

/** What the admin service is built from. */
export interface AdminServiceDeps {
  db: Database;
  ledger: LedgerPort;
  cipher: CredentialCipher;
  publisher: ConfigPublisher;
  /** Resolves upstream host names for the SSRF check; default the system resolver (tests inject a table). */
  resolveHost?: HostResolver;
  /** The admin's settings (sessions, links, alert delivery). */
  config: AdminConfig;
  /** Where alerts are told to the dashboard's live connections. */
  liveEvents: LiveEvents;
  /** The payment provider top-ups go through; undefined: none configured. */
  paymentProvider?: PaymentProvider | undefined;
  /** Where the people and top-ups aggregates log (sign-ins, payments not credited: ids, never secrets); silent when absent. */
  logger?: Logger;
  /** Told of each captured payment newly recorded as not matching its order (the admin's payment metrics). */
  onPaymentAmountMismatch?: (cause: TopUpCause) => void;
  /** Told of each payment newly recorded as matching nothing the gateway sold (metrics). */
  onUnmatchedPayment?: (source: UnmatchedSource) => void;
  /** Told of each refund that became failed (the platform admins' refund metric). */
  onRefundFailed?: () => void;
  /** Told of each payment reversal recorded with a shortfall (the platform admins' refund metric). */
  onPaymentShortfall?: () => void;
}

/** The admin's business operations, with no transport in them: one namespace per business area. */
export type AdminService = ReturnType<typeof createAdminService>;

/**
 * Wires the admin's business areas over its database, the ledger and the config stream, one
 * namespace each (tenancy, catalog, people, billing, invoicing, alerts, platform), so a method is
 * addressed by its area and two areas may not shadow each other's names. Every operation takes the
 * Actor making it: an organisation token sees only its organisation (anything else answers
 * not_found, exactly as if it did not exist) and may not do what is a platform admin's alone
 * (permission_denied); every mutation is written to the audit log in the transaction that makes it.
 */
export function createAdminService(deps: AdminServiceDeps) {
  const { db, ledger, cipher, publisher } = deps;
  const access = createResourceAccess(db);
  const billingSettings = billingSettingsFrom(deps.config);
  const invoicingSettings = invoicingSettingsFrom(deps.config);
  return {
    tenancy: {
      ...createOrganisationsService({ db, ledger, publisher, access, settings: tenancySettingsFrom(deps.config) }),
      ...createProjectsService({ db, publisher, access }),
      ...createProjectBudgetsService({ db, ledger, access }),
      ...createAdminTokensService({ db, access }),
    },
    catalog: {
      ...createGatewayModelsService({ db, cipher, publisher, settings: catalogSettingsFrom(deps.config), resolveHost: deps.resolveHost }),
      ...createModelAliasesService({ db, publisher, access }),
      ...createOrganisationModelsService({ db, access, settings: catalogSettingsFrom(deps.config) }),
      ...createUpstreamDeploymentsService({ db, cipher, publisher, settings: catalogSettingsFrom(deps.config), resolveHost: deps.resolveHost }),
    },
    people: createPeopleService({
      db, access, settings: peopleSettingsFrom(deps.config), logger: deps.logger, mailer: createMailer(smtpSettingsFrom(deps.config)),
    }),
    billing: {
      ...createBalanceService({ db, ledger, access }),
      ...createTopUpsService({
        db, ledger, access, settings: billingSettings, invoicing: invoicingSettings, provider: deps.paymentProvider, logger: deps.logger,
        onAmountMismatch: deps.onPaymentAmountMismatch, onUnmatchedPayment: deps.onUnmatchedPayment, onPaymentShortfall: deps.onPaymentShortfall,
      }),
      ...createRefundsService({
        db, ledger, access, settings: billingSettings, invoicing: invoicingSettings, provider: deps.paymentProvider, onRefundFailed: deps.onRefundFailed,
      }),
      ...createPaymentReversalsService({ db }),
    },
    invoicing: createInvoicesService({ db, access }),
    alerts: createAlertsService({
      db, ledger, cipher, access, settings: alertsSettingsFrom(deps.config), resolveHost: deps.resolveHost,
    }),
    platform: {
      ...createUsageService({ ledger, access }),
      ...createRequestLogService({ ledger, access }),
      ...createOverviewService({ db, ledger, access }),
      ...createAuditService({ db, access }),
      ...createAnalyticsService({ db, ledger, access }),
    },
  };
}
