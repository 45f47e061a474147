import type { PageProps } from '../../page-props.ts';
import { PlatformAudit } from './platform-audit.tsx';
import { PlatformModelAliases } from '../catalog/model-aliases.tsx';
import { PlatformModels } from '../catalog/platform-models.tsx';
import { PlatformOrganisations } from '../tenancy/platform-organisations.tsx';
import { PlatformPackages } from '../billing/platform-packages.tsx';
import { PlatformPeople } from '../people/platform-people.tsx';
import { PlatformReversals } from '../billing/platform-reversals.tsx';

/** The platform area's sections, in the order the sub-navigation lists them; the hash's `tab` picks one. */
const sections = [
  { tab: 'organisations', title: 'Organisations' },
  { tab: 'models', title: 'Gateway models' },
  { tab: 'aliases', title: 'Model aliases' },
  { tab: 'packages', title: 'Top-up packages' },
  { tab: 'reversals', title: 'Payment reversals' },
  { tab: 'people', title: 'People' },
  { tab: 'audit', title: 'Audit log' },
] as const;

type Section = (typeof sections)[number]['tab'];

/**
 * The platform admin's area: organisations, gateway models, model aliases, top-up packages, payment reversals, people and the audit log, each a
 * sub-tab addressed by the hash (#/platform?tab=models), so reloads and the back button keep it.
 */
export function PlatformPage(props: PageProps) {
  const current: Section = sections.find((section) => section.tab === props.params.tab)?.tab ?? 'organisations';
  const title = sections.find((section) => section.tab === current)!.title;
  return (
    <section>
      <h1>Platform · {title}</h1>
      <nav class="main-nav sub-nav" aria-label="Platform sections">
        <ul>
          {sections.map((section) => (
            <li key={section.tab}>
              <a href={`#/platform?tab=${section.tab}`} aria-current={section.tab === current ? 'page' : undefined}>{section.title}</a>
            </li>
          ))}
        </ul>
      </nav>
      {current === 'organisations' ? <PlatformOrganisations /> : null}
      {current === 'models' ? <PlatformModels /> : null}
      {current === 'aliases' ? <PlatformModelAliases /> : null}
      {current === 'packages' ? <PlatformPackages /> : null}
      {current === 'reversals' ? <PlatformReversals /> : null}
      {current === 'people' ? <PlatformPeople /> : null}
      {current === 'audit' ? <PlatformAudit /> : null}
    </section>
  );
}
