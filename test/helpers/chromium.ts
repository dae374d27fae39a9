// Debian's chromium for the browser tests (never a downloaded browser: the CI machine has no internet): where it is,
// why a test is skipped without it, and the flags that keep it offline.
import { existsSync } from 'node:fs';

export const CHROMIUM_PATH = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

/** Null when chromium is there; else the reason `what` is skipped, printed so that it reaches the CI log. */
export function chromiumMissing(what: string): string | null {
  if (existsSync(CHROMIUM_PATH)) return null;
  const reason = `${what} skipped: no chromium at ${CHROMIUM_PATH} (apt-get install -y chromium, or set CHROMIUM_PATH)`;
  // eslint-disable-next-line no-console -- the reason for the skip must reach the CI log, not only a skipped count.
  console.warn(reason);
  return reason;
}

/**
 * As root, without a GPU and without internet: nothing may phone home (updates, sync, QUIC probes). The resolver rule
 * sends `host` to the test server on loopback and answers nothing else.
 */
export function offlineChromiumArgs(host: string): string[] {
  return [
    '--no-sandbox',
    '--disable-gpu',
    '--disable-quic',
    '--no-first-run',
    '--disable-background-networking',
    '--disable-component-update',
    '--disable-sync',
    `--host-resolver-rules=MAP ${host} 127.0.0.1, MAP * ~NOTFOUND`,
  ];
}
