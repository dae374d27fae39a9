// Receipts a phone relays from a lock (docs/api-reference.md 8.5, "Signed receipts"): verified with the lock's registered
// key, they are the lock's own word; anything else a phone says about a lock is a report only.
import type { KeyObject } from 'node:crypto';
import type { Database } from '../db/database.js';
import { findLockKey } from '../db/repositories/holder-key.repo.js';
import { BadRequestError } from '../errors.js';
import { readHolderPublicKey } from '../shared/holder-keys.js';
import { readLockReceipt, type LockLogEntry } from '../shared/lock-receipt.js';
import { BoundedMap } from '../shared/bounded-map.js';

/** What the lock itself says in an upload, trusted as the lock's own client is (docs/api-reference.md 8.4, 8.5). */
export interface LockWord {
  /** The change-log position the lock has applied; absent: it acknowledges nothing. */
  appliedSerial?: number;
  /** The lock's clock (ms), for its clock estimate; absent: the estimate stays. */
  lockTime?: number;
  /**
   * When set, `lockTime` moves the estimate only if this entry number lies above every entry of the lock's numbering
   * stored before: the word is newer than anything the lock said before, not an old receipt relayed again. Absent:
   * `lockTime` is now (the lock's own client, which sends its clock at the moment of the upload).
   */
  lockTimeEntryNo?: number;
  entries: LockLogEntry[];
}

/** Keys read from their JWK, by RFC 7638 thumbprint: a lock's receipts verify without reading its key anew. */
const KEY_CACHE_MAX_ENTRIES = 10_000;

export interface LockReceiptVerifierOptions {
  db: Database;
}

export function createLockReceiptVerifier({ db }: LockReceiptVerifierOptions) {
  const keys = new BoundedMap<string, KeyObject>(KEY_CACHE_MAX_ENTRIES);

  async function keyOf(tenantId: string, securedObjectId: string): Promise<KeyObject | null> {
    const stored = await findLockKey(db, tenantId, securedObjectId);
    if (!stored) return null;
    const cached = keys.get(stored.thumbprint);
    if (cached) return cached;
    const reading = readHolderPublicKey(stored.publicKey);
    if ('error' in reading) return null;
    keys.set(stored.thumbprint, reading.keyObject);
    return reading.keyObject;
  }

  return {
    /**
     * Verifies every receipt with the lock's registered key and merges them into the lock's word: the highest
     * `appliedSerial` (never lowering anything, docs/api-reference.md 8.4), every entry (idempotent when stored), and
     * the `lockTime` of the receipt with the highest entry number, which moves the clock estimate only if that number
     * is new (LockWord.lockTimeEntryNo). One receipt that fails refuses the whole upload (400), so nothing of it is stored.
     */
    async verify(tenantId: string, securedObjectId: string, receipts: readonly string[]): Promise<LockWord> {
      const key = await keyOf(tenantId, securedObjectId);
      if (!key) {
        throw new BadRequestError(
          `Secured object ${securedObjectId} has no registered key, so its receipts cannot be verified. Relay its entries as ` +
            '`entries`: they are stored as a report (docs/api-reference.md 8.5).',
          [{ field: 'receipts', message: 'the lock has no registered key' }],
        );
      }
      const word: LockWord = { entries: [] };
      let newest = 0;
      for (const [index, receipt] of receipts.entries()) {
        const reading = readLockReceipt(receipt, key, securedObjectId);
        if ('error' in reading) {
          throw new BadRequestError(`receipts[${index}] ${reading.error}; nothing of this upload was stored.`, [
            { field: `receipts/${index}`, message: reading.error },
          ]);
        }
        const { appliedSerial, lockTime, entries } = reading.receipt;
        if (appliedSerial !== undefined) word.appliedSerial = Math.max(word.appliedSerial ?? 0, appliedSerial);
        word.entries.push(...entries);
        const highest = entries.reduce((high, entry) => Math.max(high, entry.entryNo), 0);
        if (highest > newest) {
          newest = highest;
          word.lockTime = lockTime;
          word.lockTimeEntryNo = highest;
        }
      }
      return word;
    },
  };
}

export type LockReceiptVerifier = ReturnType<typeof createLockReceiptVerifier>;
