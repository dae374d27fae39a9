// The shape of docs/test-vectors/door.json (docs/lock-integration.md 10): what scripts/door-vectors.ts writes and a lock
// maker's harness, like the project's own tests, reads.

/** The lock's state in one case: its trust, what it learnt, its clock and the session its hello opened. */
export interface VectorLock {
  id: string;
  issuer: string;
  keys: { keys: unknown[] };
  holderBinding: 'optional' | 'required';
  revoked: string[];
  revokedKeys: string[];
  serial: number;
  now: number;
  nonce: string;
  nonceUsed: boolean;
  decommissioned: boolean;
  lockdown?: boolean;
  /** The serial of the lock state the lock holds (docs/lock-integration.md 11); absent: 0. */
  lockStateSerial?: number;
  /**
   * A lock state (`lock-state+jwt`) a phone hands the lock before the decision: applied as docs/lock-integration.md 11
   * says (verified with `keys`, serial above `lockStateSerial`), or refused and the lock keeps its mode.
   */
  lockState?: string;
}

export interface VectorCase {
  name: string;
  lock: VectorLock;
  credential: string;
  proof: string | null;
  command: string;
  channel: string;
  expect: { decision: 'open' | 'deny'; reason: string };
}

export interface DoorVectors {
  /** Private JWKs, for tests only. */
  keys: { tenant: Record<string, string>; phones: Record<string, Record<string, string>>; locks: Record<string, Record<string, string>> };
  cases: VectorCase[];
}
