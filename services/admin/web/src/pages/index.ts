// The dashboard's pages after sign-in: the path each answers (hash routes, "#/projects"), its title
// in the navigation, and who may open it. Sign-in and links (#/link/<token>) are the shell's. The
// pages sit in one folder per business area of the admin (tenancy, catalog, people, billing,
// invoicing, alerts, platform; start/ holds the Quickstart and Models pages); common/ holds the rupee and IST date text several areas use.
import type { FunctionComponent } from 'preact';
import type { PageProps } from '../page-props.ts';
import { AlertsPage } from './alerts/alerts.tsx';
import { AnalyticsPage } from './platform/analytics.tsx';
import { BillingPage } from './billing/billing.tsx';
import { InvoicesPage } from './invoicing/invoices.tsx';
import { MembersPage } from './people/members.tsx';
import { ModelAliasesPage } from './catalog/model-aliases.tsx';
import { ModelsPage } from './start/models.tsx';
import { OverviewPage } from './tenancy/overview.tsx';
import { PlatformPage } from './platform/platform.tsx';
import { ProjectsPage } from './tenancy/projects.tsx';
import { QuickstartPage } from './start/quickstart.tsx';
import { RequestsPage } from './platform/requests.tsx';
import { UsagePage } from './platform/usage.tsx';

/** One page of the dashboard. */
export interface PageRoute {
  /** The hash path, e.g. "/projects"; ":name" segments become params. */
  path: string;
  /** The page's name in the navigation and the document title. */
  title: string;
  component: FunctionComponent<PageProps>;
  /**
   * Who sees it: members whose role in the chosen organisation allows the admin API operation the
   * page reads (by operationId, as GET /admin/v1/me lists them), or platform admins only.
   */
  access: { operation: string } | 'platform';
}

/** Every page, in navigation order. */
export const pageRoutes: PageRoute[] = [
  { path: '/overview', title: 'Overview', component: OverviewPage, access: { operation: 'getBalance' } },
  { path: '/quickstart', title: 'Quickstart', component: QuickstartPage, access: { operation: 'listOrganisationModels' } },
  { path: '/models', title: 'Models', component: ModelsPage, access: { operation: 'listOrganisationModels' } },
  { path: '/projects', title: 'Projects', component: ProjectsPage, access: { operation: 'listProjects' } },
  { path: '/usage', title: 'Usage', component: UsagePage, access: { operation: 'listUsage' } },
  { path: '/requests', title: 'Requests', component: RequestsPage, access: { operation: 'listRequests' } },
  { path: '/alerts', title: 'Alerts', component: AlertsPage, access: { operation: 'listAlerts' } },
  { path: '/members', title: 'Members', component: MembersPage, access: { operation: 'listMembers' } },
  { path: '/billing', title: 'Billing', component: BillingPage, access: { operation: 'listTopUps' } },
  { path: '/invoices', title: 'Invoices', component: InvoicesPage, access: { operation: 'listInvoices' } },
  { path: '/model-aliases', title: 'Model aliases', component: ModelAliasesPage, access: { operation: 'listOrganisationModelAliases' } },
  { path: '/platform', title: 'Platform', component: PlatformPage, access: 'platform' },
  { path: '/analytics', title: 'Analytics', component: AnalyticsPage, access: 'platform' },
];
