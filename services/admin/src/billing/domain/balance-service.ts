import type { Database } from '@gateway/db';
import { GatewayError } from '@gateway/errors';
import { requirePlatformAdmin, type Actor } from '../../common/domain/actor.ts';
import type { Balance } from '../../common/domain/admin-records.ts';
import { recordAuditEvent } from '../../common/domain/audit-log.ts';
import type { LedgerPort } from '../../common/domain/ledger-port.ts';
import type { ResourceAccess } from '../../common/domain/resource-access.ts';

/** A manual credit: the caller's idempotency key, a positive amount in µ₹ and why. */
export interface CreditInput {
  idempotencyKey: string;
  amountMicros: bigint;
  reason: string;
}

/** The result of a manual credit; a replay returns the first call's result with `replayed` set. */
export interface CreditOutcome {
  creditId: string;
  organisationId: string;
  amountMicros: bigint;
  reason: string;
  /** The balance right after the credit was applied (the same on a replay). */
  balance: Balance;
  replayed: boolean;
}

/** The JSON stored with a completed manual credit; money as decimal strings. */
interface StoredCreditResponse {
  creditId: string;
  organisationId: string;
  amountMicros: string;
  reason: string;
  balance: { creditedMicros: string; availableMicros: string; heldMicros: string; debitedMicros: string };
}

/** What the balance aggregate is built from. */
export interface BalanceServiceDeps {
  db: Database;
  ledger: LedgerPort;
  access: ResourceAccess;
}

function toBalanceJson(balance: Balance): StoredCreditResponse['balance'] {
  return {
    creditedMicros: balance.creditedMicros.toString(),
    availableMicros: balance.availableMicros.toString(),
    heldMicros: balance.heldMicros.toString(),
    debitedMicros: balance.debitedMicros.toString(),
  };
}

function fromStoredCredit(stored: StoredCreditResponse, replayed: boolean): CreditOutcome {
  return {
    creditId: stored.creditId,
    organisationId: stored.organisationId,
    amountMicros: BigInt(stored.amountMicros),
    reason: stored.reason,
    balance: {
      organisationId: stored.organisationId,
      creditedMicros: BigInt(stored.balance.creditedMicros),
      availableMicros: BigInt(stored.balance.availableMicros),
      heldMicros: BigInt(stored.balance.heldMicros),
      debitedMicros: BigInt(stored.balance.debitedMicros),
    },
    replayed,
  };
}

/** An organisation's wallet through the ledger: manual credits and the balance (route tag "balance"). */
export function createBalanceService({ db, ledger, access }: BalanceServiceDeps) {
  const { requireOrganisation } = access;

  return {
    /**
     * Credits an organisation's balance through the ledger, idempotently per Idempotency-Key
     * (IDEMPOTENCY): the same key and body return the first result; the same key with another
     * body is refused.
     */
    async creditOrganisation(actor: Actor, organisationId: string, input: CreditInput): Promise<CreditOutcome> {
      await requireOrganisation(actor, organisationId);
      requirePlatformAdmin(actor);
      const creditId = `manual:${organisationId}:${input.idempotencyKey}`;
      const conflict = () => new GatewayError('idempotency_conflict', {
        publicMessage: 'This Idempotency-Key was already used for a credit with a different amount_micros or reason.',
        param: 'Idempotency-Key',
      });
      await db.query(
        `INSERT INTO manual_credits (credit_id, organisation_id, idempotency_key, amount_micros, reason)
         VALUES ($1, $2, $3, $4, $5) ON CONFLICT (credit_id) DO NOTHING`,
        [creditId, organisationId, input.idempotencyKey, input.amountMicros, input.reason],
      );
      const { rows } = await db.query<{ amount_micros: bigint; reason: string; response: StoredCreditResponse | null }>(
        'SELECT amount_micros, reason, response FROM manual_credits WHERE credit_id = $1', [creditId],
      );
      const recorded = rows[0]!;
      if (recorded.amount_micros !== input.amountMicros || recorded.reason !== input.reason) throw conflict();
      if (recorded.response !== null) return fromStoredCredit(recorded.response, true);

      // Not completed yet (new, or an earlier attempt failed part-way): the ledger credit is
      // idempotent on creditId, so calling it again is safe.
      await ledger.credit({ creditId, organisationId, amountMicros: input.amountMicros, reason: input.reason });
      const balance = await ledger.getBalance(organisationId);
      const response: StoredCreditResponse = {
        creditId, organisationId, amountMicros: input.amountMicros.toString(), reason: input.reason, balance: toBalanceJson(balance),
      };
      const completed = await db.transaction(async (tx) => {
        const updated = await tx.query<{ response: StoredCreditResponse }>(
          `UPDATE manual_credits SET response = $2, completed_at = clock_timestamp()
           WHERE credit_id = $1 AND response IS NULL RETURNING response`,
          [creditId, JSON.stringify(response)],
        );
        if (updated.rows.length === 1) {
          await recordAuditEvent(tx, {
            actor, organisationId, action: 'organisation.credit', resourceType: 'credit', resourceId: creditId,
            changes: {
              amount_micros: { before: null, after: input.amountMicros.toString() },
              reason: { before: null, after: input.reason },
            },
          });
        }
        return updated.rows.length === 1;
      });
      if (completed) return fromStoredCredit(response, false);
      // A concurrent call with the same key completed first: answer with its result.
      const winner = await db.query<{ response: StoredCreditResponse }>('SELECT response FROM manual_credits WHERE credit_id = $1', [creditId]);
      return fromStoredCredit(winner.rows[0]!.response, true);
    },

    /** An organisation's balance as the ledger holds it. */
    async getBalance(actor: Actor, organisationId: string): Promise<Balance> {
      await requireOrganisation(actor, organisationId);
      return ledger.getBalance(organisationId);
    },
  };
}
