// A lock's receipt (docs/api-reference.md 8.5, "Signed receipts"; docs/lock-integration.md 4.4, 8): the access-log entries and
// the applied serial a lock signs with its own key for a phone to relay. One strict reading, so that what the service
// trusts as the lock's word is exactly what the lock signed.
import type { KeyObject } from 'node:crypto';
import { parseHolderJws, verifyHolderSignature } from './holder-keys.js';

/** RFC 8725 3.11: the explicit type of a receipt, so no other JWS the lock signs (a hello) passes for one. */
export const LOCK_RECEIPT_TYPE = 'lock-receipt+jwt';
/** The longest receipt read: 1,000 entries of a few hundred bytes each, base64url. */
export const MAX_RECEIPT_LENGTH = 512 * 1024;

/** One access-log entry as a lock numbers and words it (docs/lock-integration.md 8). */
export interface LockLogEntry {
  /** From 1, rising by one per decision, never reused. */
  entryNo: number;
  /** The decision's instant by the lock's clock (ms); 0 when the lock had no valid clock reading. */
  lockTime: number;
  /** The presented credential's `jti`, when it had one that fits the upload format. */
  tokenId?: string;
  command: string;
  channel: string;
  result: 'granted' | 'denied';
  /** The decision's reason, a word of docs/lock-integration.md 3.2. */
  reason?: string;
}

export interface LockReceipt {
  /** The change-log position the lock has applied (docs/api-reference.md 8.4); absent: it acknowledges nothing. */
  appliedSerial?: number;
  /** The lock's clock when it signed the receipt (ms). */
  lockTime: number;
  entries: LockLogEntry[];
}

/** Unix milliseconds up to the largest date JavaScript holds, as the upload's `lockTime` (schemas/common.ts Millis). */
const MAX_MILLIS = 8_640_000_000_000_000;
/** The bounds of an entry's text fields, as an upload's plain entries have them (schemas/access-log.ts). */
const TEXT_BOUNDS: Record<string, [number, number]> = { tokenId: [1, 256], command: [1, 16], channel: [1, 32], reason: [1, 200] };
const ENTRY_MEMBERS = new Set(['entryNo', 'lockTime', 'tokenId', 'command', 'channel', 'result', 'reason']);
/** PostgreSQL text holds neither U+0000 nor a lone surrogate: refused here, as a 400, never a database error. */
const LONE_SURROGATE = /\p{Cs}/u;
const unstorable = (text: string): boolean => text.includes('\u0000') || LONE_SURROGATE.test(text);

const isCount = (value: unknown, min: number, max: number): value is number =>
  typeof value === 'number' && Number.isSafeInteger(value) && value >= min && value <= max;

function entryError(value: unknown, index: number): string | null {
  const where = `entries[${index}]`;
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return `${where} is not an object`;
  const entry = value as Record<string, unknown>;
  const extra = Object.keys(entry).filter((name) => !ENTRY_MEMBERS.has(name));
  if (extra.length > 0) return `${where} has unknown members: ${extra.join(', ')}`;
  if (!isCount(entry['entryNo'], 1, Number.MAX_SAFE_INTEGER)) return `${where}.entryNo must be an integer from 1 to 2^53-1`;
  if (!isCount(entry['lockTime'], 0, MAX_MILLIS)) return `${where}.lockTime must be Unix milliseconds`;
  for (const [name, [min, max]] of Object.entries(TEXT_BOUNDS)) {
    const text = entry[name];
    const required = name === 'command' || name === 'channel';
    if (text === undefined && !required) continue;
    if (typeof text !== 'string' || text.length < min || text.length > max || unstorable(text)) {
      return `${where}.${name} must be text of ${min} to ${max} characters`;
    }
  }
  if (entry['result'] !== 'granted' && entry['result'] !== 'denied') return `${where}.result must be granted or denied`;
  return null;
}

/**
 * Verifies a receipt with the lock's key and reads it: `typ` exactly lock-receipt+jwt, ES256 by `key`, `sub` the lock's
 * id, then the payload's shape. The error says which check failed, for the phone's developer: a receipt is the lock's
 * word about the lock, not a credential, so naming the check reveals nothing a forger could use.
 */
export function readLockReceipt(jws: unknown, key: KeyObject, securedObjectId: string): { receipt: LockReceipt } | { error: string } {
  const parsed = parseHolderJws(jws, MAX_RECEIPT_LENGTH);
  if (!parsed) return { error: 'is not a compact JWS with JSON header and payload' };
  if (parsed.header['typ'] !== LOCK_RECEIPT_TYPE) return { error: `must have typ ${LOCK_RECEIPT_TYPE}` };
  if (parsed.header['crit'] !== undefined) return { error: 'has a crit header this service does not understand' };
  if (!verifyHolderSignature(parsed, key)) return { error: 'is not signed ES256 by the lock\'s registered key' };
  const { sub, appliedSerial, lockTime, entries } = parsed.payload;
  if (sub !== securedObjectId) return { error: `is a receipt of another lock (sub must be ${securedObjectId})` };
  if (appliedSerial !== undefined && !isCount(appliedSerial, 0, Number.MAX_SAFE_INTEGER)) return { error: 'appliedSerial must be an integer from 0' };
  if (!isCount(lockTime, 0, MAX_MILLIS)) return { error: 'lockTime must be Unix milliseconds' };
  if (!Array.isArray(entries)) return { error: 'entries must be an array' };
  for (const [index, entry] of entries.entries()) {
    const error = entryError(entry, index);
    if (error) return { error };
  }
  return { receipt: { ...(appliedSerial !== undefined ? { appliedSerial } : {}), lockTime, entries: entries as LockLogEntry[] } };
}
