/** The settings the catalog area's rules read; catalog/catalog-settings.ts maps them from the environment. */
export interface CatalogSettings {
  /** true: upstream base URLs may be http and private addresses for every model (development, demo). */
  allowPrivateUpstreams: boolean;
  /** The proxy's public `/v1` base URL customers call (no trailing slash), shown to members; undefined when the operator has not set it. */
  proxyPublicUrl?: string | undefined;
}
