import type { Database } from '@gateway/db';
import type { Logger } from '@gateway/logger';
import type { HostResolver } from '@gateway/address-policy';
import { createAdminTokensService } from './admin-tokens-service.ts';
import { createAuditService } from './audit-service.ts';
import { createBalanceService } from './balance-service.ts';
import type { ConfigPublisher } from './config-publisher.ts';
import type { CredentialCipher } from './credential-cipher.ts';
import { createGatewayModelsService } from './gateway-models-service.ts';
import type { LedgerPort } from './ledger-port.ts';
import { createModelAliasesService } from './model-aliases-service.ts';
import { createOrganisationsService } from './organisations-service.ts';
import { createProjectBudgetsService } from './project-budgets-service.ts';
import { createProjectsService } from './projects-service.ts';
import { createResourceAccess } from './resource-access.ts';
import { createUsageService } from './usage-service.ts';
import type { AdminConfig } from '../config.ts';
import { createAlertsService } from './alerts-service.ts';
import { createAnalyticsService } from './analytics-service.ts';
import type { LiveEvents } from './live-events.ts';
import { createPeopleService } from './people-service.ts';
import { createInvoicesService } from './invoices-service.ts';
import type { PaymentProvider } from './payment-provider.ts';
import type { TopUpCause } from './topup-state.ts';
import { createPaymentReversalsService } from './refund-events.ts';
import { createRefundsService } from './refunds-service.ts';
import type { UnmatchedSource } from './unmatched-payments.ts';
import { createTopUpsService } from './topups-service.ts';

/** What the admin service is built from. */
export interface AdminServiceDeps {
  db: Database;
  ledger: LedgerPort;
  cipher: CredentialCipher;
  publisher: ConfigPublisher;
  /** true: upstream base URLs may be http and private addresses (development, demo). */
  allowPrivateUpstreams: boolean;
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

/** The admin's business operations, with no transport in them: every aggregate's, side by side. */
export type AdminService = ReturnType<typeof createAdminService>;

/**
 * Wires the admin's aggregates (one module each, named after the OpenAPI route tags) over its
 * database, the ledger and the config stream. Every operation takes the Actor making it: an
 * organisation token sees only its organisation (anything else answers not_found, exactly as if
 * it did not exist) and may not do what is a platform admin's alone (permission_denied); every
 * mutation is written to the audit log in the transaction that makes it.
 */
export function createAdminService(deps: AdminServiceDeps) {
  const { db, ledger, cipher, publisher } = deps;
  const access = createResourceAccess(db);
  return {
    ...createOrganisationsService({ db, ledger, publisher, access, platformResponseRetentionS: deps.config.ADMIN_RESPONSE_RETENTION_S }),
    ...createBalanceService({ db, ledger, access }),
    ...createUsageService({ ledger, access }),
    ...createProjectsService({ db, publisher, access }),
    ...createProjectBudgetsService({ db, ledger, access }),
    ...createGatewayModelsService({ db, cipher, publisher, allowPrivateUpstreams: deps.allowPrivateUpstreams, resolveHost: deps.resolveHost }),
    ...createAdminTokensService({ db, access }),
    ...createModelAliasesService({ db, publisher, access }),
    ...createAuditService({ db, access }),
    ...createPeopleService({ db, access, config: deps.config, logger: deps.logger }),
    ...createAlertsService({ db, ledger, cipher, access, config: deps.config, liveEvents: deps.liveEvents, resolveHost: deps.resolveHost }),
    ...createAnalyticsService({ db, ledger, access }),
    ...createTopUpsService({
      db, ledger, access, config: deps.config, provider: deps.paymentProvider, liveEvents: deps.liveEvents, logger: deps.logger,
      onAmountMismatch: deps.onPaymentAmountMismatch, onUnmatchedPayment: deps.onUnmatchedPayment, onPaymentShortfall: deps.onPaymentShortfall,
    }),
    ...createInvoicesService({ db, access, config: deps.config }),
    ...createRefundsService({ db, ledger, access, config: deps.config, provider: deps.paymentProvider, onRefundFailed: deps.onRefundFailed }),
    ...createPaymentReversalsService({ db }),
  };
}
