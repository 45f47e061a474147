/**
 * Reads of an organisation's money through the admin API, shared by the process-level test
 * gateways (credit grants, faults): its balance and every usage record, in µ₹ as bigint.
 */

/** An organisation's four balances, µ₹. */
export interface OrganisationBalance {
  creditedMicros: bigint;
  availableMicros: bigint;
  heldMicros: bigint;
  debitedMicros: bigint;
}

/** One usage record as the admin API lists it. */
export interface ListedUsageRecord {
  requestId: string;
  inputTokens: number;
  outputTokens: number;
  costMicros: bigint;
  debitedMicros: bigint;
  usageSource: string;
}

/** One authenticated admin API call that throws on a status of 300 or more and returns the JSON body. */
export type AdminCall = (method: string, path: string) => Promise<Record<string, any>>;

/** The organisation's balance. */
export async function readBalance(adminCall: AdminCall, organisationId: string): Promise<OrganisationBalance> {
  const json = await adminCall('GET', `/organisations/${organisationId}/balance`);
  return {
    creditedMicros: BigInt(json.credited_micros), availableMicros: BigInt(json.available_micros),
    heldMicros: BigInt(json.held_micros), debitedMicros: BigInt(json.debited_micros),
  };
}

/** Every usage record of the organisation, following the cursor through every page (500 a page). */
export async function readAllUsage(adminCall: AdminCall, organisationId: string): Promise<ListedUsageRecord[]> {
  const records: ListedUsageRecord[] = [];
  let cursor: string | undefined;
  for (let page = 0; page < 1_000; page += 1) {
    const query = new URLSearchParams({ limit: '500', ...(cursor === undefined ? {} : { cursor }) });
    const json = await adminCall('GET', `/organisations/${organisationId}/usage?${query}`);
    for (const record of json.data as Array<Record<string, any>>) {
      records.push({
        requestId: record.request_id, inputTokens: record.input_tokens, outputTokens: record.output_tokens,
        costMicros: BigInt(record.cost_micros), debitedMicros: BigInt(record.debited_micros), usageSource: record.usage_source,
      });
    }
    cursor = json.next_cursor ?? undefined;
    if (cursor === undefined || cursor === '') return records;
  }
  throw new Error('usage paging did not end within 1,000 pages');
}
