import { overviewRoutes } from '../../platform/http/overview-routes.ts';
import type { UpstreamUrlPolicy } from '../../catalog/domain/upstream-url.ts';
import { alertRoutes } from '../../alerts/http/alert-routes.ts';
import { balanceRoutes } from '../../billing/http/balance-routes.ts';
import { billingRoutes } from '../../billing/http/billing-routes.ts';
import { paymentReversalRoutes } from '../../billing/http/payment-reversal-routes.ts';
import { refundRoutes } from '../../billing/http/refund-routes.ts';
import { gatewayModelRoutes } from '../../catalog/http/gateway-model-routes.ts';
import { modelAliasRoutes } from '../../catalog/http/model-alias-routes.ts';
import { organisationModelRoutes } from '../../catalog/http/organisation-model-routes.ts';
import { upstreamDeploymentRoutes } from '../../catalog/http/upstream-deployment-routes.ts';
import { invoiceRoutes } from '../../invoicing/http/invoice-routes.ts';
import { peopleRoutes } from '../../people/http/people-routes.ts';
import { analyticsRoutes } from '../../platform/http/analytics-routes.ts';
import { auditRoutes, usageRecordRoutes, usageSummaryRoutes } from '../../platform/http/platform-routes.ts';
import { requestLogRoutes } from '../../platform/http/request-log-routes.ts';
import {
  adminTokenRoutes, organisationRoutes, projectKeyAndBudgetRoutes, projectRoutes,
} from '../../tenancy/http/tenancy-routes.ts';
import type { AdminRoute } from './route-definition.ts';
import { systemRoutes } from './system-routes.ts';

/**
 * The admin API's routes: each area's route groups, concatenated. The OpenAPI document lists
 * paths in the order they first appear here, so the groups keep the published document's order
 * (which is why an area's groups are not all adjacent). The SSRF policy shapes the gateway-model
 * bodies' validation.
 */
export function createAdminRoutes(policy: UpstreamUrlPolicy): AdminRoute[] {
  return [
    ...systemRoutes(),
    ...organisationRoutes(),
    ...balanceRoutes(),
    ...usageRecordRoutes(),
    ...projectRoutes(),
    ...gatewayModelRoutes(policy),
    ...usageSummaryRoutes(),
    ...overviewRoutes(),
    ...projectKeyAndBudgetRoutes(),
    ...adminTokenRoutes(),
    ...auditRoutes(),
    ...peopleRoutes(),
    ...alertRoutes(),
    ...modelAliasRoutes(),
    ...organisationModelRoutes(),
    ...upstreamDeploymentRoutes(policy),
    ...analyticsRoutes(),
    ...requestLogRoutes(),
    ...billingRoutes(),
    ...invoiceRoutes(),
    ...refundRoutes(),
    ...paymentReversalRoutes(),
  ];
}
