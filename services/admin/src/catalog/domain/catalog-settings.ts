/** The settings the catalog area's rules read; catalog/catalog-settings.ts maps them from the environment. */
export interface CatalogSettings {
  /** true: upstream base URLs may be http and private addresses for every model (development, demo). */
  allowPrivateUpstreams: boolean;
}
