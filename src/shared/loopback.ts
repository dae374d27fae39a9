// Whether a listen address or a URL's host names this machine only (loopback): what a lock elsewhere can never reach.
import { isIP } from 'node:net';

/**
 * A host name or address that only this machine reaches: `localhost` and its subdomains (RFC 6761 section 6.3),
 * 127.0.0.0/8 (RFC 1122 section 3.2.1.3), `::1` (RFC 4291 section 2.5.3) and 127.0.0.0/8 mapped into IPv6. Brackets
 * around an IPv6 literal (as a URL writes it) are ignored.
 */
export function isLoopbackHost(host: string): boolean {
  const name = host.trim().toLowerCase().replace(/^\[(.*)\]$/, '$1').replace(/\.$/, '');
  if (name === 'localhost' || name.endsWith('.localhost')) return true;
  if (isIP(name) === 4) return name.startsWith('127.');
  if (isIP(name) === 6) {
    if (/^(0{0,4}:){1,7}:?0{0,3}1$/.test(name) || name === '::1') return true;
    const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/.exec(name);
    return mapped !== null && mapped[1]!.startsWith('127.');
  }
  return false;
}

/** The host of `url` is loopback (isLoopbackHost); an unparsable URL is not, its own validation refuses it. */
export function isLoopbackUrl(url: string): boolean {
  try {
    return isLoopbackHost(new URL(url).hostname);
  } catch {
    return false;
  }
}
