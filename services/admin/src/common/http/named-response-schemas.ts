import type { z } from 'zod';
import { balanceResponse, creditResponse } from '../../billing/http/balance-schemas.ts';
import { gatewayModelResponse } from '../../catalog/http/catalog-schemas.ts';
import { auditEventResponse, usageListResponse, usageSummaryResponse } from '../../platform/http/platform-schemas.ts';
import {
  adminTokenCreatedResponse, adminTokenResponse, organisationResponse, projectBudgetResponse, projectCreatedResponse, projectResponse,
} from '../../tenancy/http/tenancy-schemas.ts';
import { errorResponse, healthResponse } from './response-schemas.ts';

/** Response schemas the OpenAPI document names under components/schemas (and references by $ref). */
export const namedResponseSchemas = new Map<z.ZodType, string>([
  [organisationResponse, 'Organisation'],
  [projectResponse, 'Project'],
  [projectCreatedResponse, 'ProjectCreated'],
  [gatewayModelResponse, 'GatewayModel'],
  [balanceResponse, 'Balance'],
  [creditResponse, 'Credit'],
  [usageListResponse, 'UsageList'],
  [errorResponse, 'Error'],
  [healthResponse, 'Health'],
  [adminTokenResponse, 'AdminToken'],
  [adminTokenCreatedResponse, 'AdminTokenCreated'],
  [projectBudgetResponse, 'ProjectBudget'],
  [usageSummaryResponse, 'UsageSummary'],
  [auditEventResponse, 'AuditEvent'],
]);
