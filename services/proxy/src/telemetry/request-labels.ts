// The label values of the proxy's per-request metrics, shared by the observer that counts them
// (request-observer.ts), the trace that records them (request-trace.ts) and the code that reports
// them, so the observer and the trace need not import each other for their types.

/** A route template of the proxy's public API (a label value: never a concrete path). */
export type ProxyRoute = '/v1/chat/completions' | '/v1/responses' | '/v1/responses/:id' | '/v1/responses/:id/input_items' | '/v1/messages' | '/v1/messages/count_tokens' | '/v1/embeddings' | '/v1/models' | '/v1/models/:slug';

/** How a Reserve was held: carved from a credit grant in memory, or at the ledger (exact). */
export type ReservePath = 'carved' | 'exact';

/** What became of a Reserve, as the proxy saw it (the `outcome` label of proxyReserves). */
export type ReserveMetricOutcome = 'held' | 'insufficient_balance' | 'budget_exceeded' | 'ledger_unavailable' | 'error';

/** What became of one upstream call (the `outcome` label): `aborted` = the gateway cut it (client gone, shutdown, cost stop). */
export type UpstreamMetricOutcome = 'ok' | 'http_error' | 'timeout' | 'connect_error' | 'aborted' | 'bad_response';
