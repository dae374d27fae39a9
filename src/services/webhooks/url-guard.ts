// Where a webhook may be sent (docs/api-reference.md 10): https only, never to this machine, the operator's private
// network, link-local or cloud-metadata addresses, checked when subscribing and again at every delivery, at the
// moment of connecting, so a name that resolves elsewhere later (DNS rebinding) is still refused.
import { lookup as dnsLookup } from 'node:dns';
import { BlockList, isIP, type LookupFunction } from 'node:net';

/** `public` may always be reached; `private` only with WEBHOOK_ALLOW_INSECURE; `forbidden` never. */
export type AddressClass = 'public' | 'private' | 'forbidden';

export interface ResolvedAddress {
  address: string;
  family: number;
}

/** Resolves a host name to every address it has (the shape of `dns.lookup` with `all: true`). */
export type Resolver = (hostname: string) => Promise<ResolvedAddress[]>;

const dnsResolver: Resolver = (hostname) =>
  new Promise((resolve, reject) => {
    dnsLookup(hostname, { all: true, verbatim: true }, (error, addresses) => (error ? reject(error) : resolve(addresses)));
  });

function blockList(v4: string[], v6: string[]): BlockList {
  const list = new BlockList();
  for (const cidr of v4) list.addSubnet(cidr.split('/')[0]!, Number(cidr.split('/')[1]), 'ipv4');
  for (const cidr of v6) list.addSubnet(cidr.split('/')[0]!, Number(cidr.split('/')[1]), 'ipv6');
  return list;
}

/**
 * Never reached, whatever the setting: "this network", link-local (where cloud metadata services answer,
 * 169.254.169.254 and fe80::/10), the metadata addresses outside it (Alibaba's 100.100.100.200, AWS's fd00:ec2::254),
 * multicast, reserved and documentation ranges (RFC 6890). The IPv6 forms that carry an IPv4 address (Teredo
 * 2001::/32 among them) are judged by that address instead (`embeddedIPv4`, docs/security-cases.md H55).
 */
const FORBIDDEN = blockList(
  [
    '0.0.0.0/8',
    '169.254.0.0/16',
    '100.100.100.200/32',
    '192.0.0.0/24',
    '192.0.2.0/24',
    '198.51.100.0/24',
    '203.0.113.0/24',
    '224.0.0.0/4',
    '240.0.0.0/4',
  ],
  ['::/128', 'fe80::/10', 'fd00:ec2::254/128', 'ff00::/8', '2001:db8::/32', '100::/64'],
);

/** This machine and private networks (RFC 1918, RFC 6598 shared space, RFC 2544 benchmarking, RFC 4193 ULA). */
const PRIVATE = blockList(
  ['127.0.0.0/8', '10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16', '100.64.0.0/10', '198.18.0.0/15'],
  ['::1/128', 'fc00::/7'],
);

/**
 * The IPv4 addresses an IPv6 address may carry, so it is judged by where it really leads (docs/security-cases.md H55):
 * IPv4-mapped `::ffff:0:0/96` and IPv4-compatible `::/96` (RFC 4291 2.5.5), IPv4-translated `::ffff:0:0:0/96`
 * (RFC 2765 2.1), the NAT64 well-known prefix `64:ff9b::/96` (RFC 6052 2.1), the local-use NAT64 prefix
 * `64:ff9b:1::/48` (RFC 8215; the operator picks a prefix length from /48 to /96, so every RFC 6052 2.2 position is a
 * candidate), 6to4 `2002::/16` (RFC 3056 2) and Teredo `2001::/32`, whose client address is the last 32 bits
 * inverted (RFC 4380 4). An empty list: the address carries none.
 */
function embeddedIPv4(address: string): string[] {
  const groups = expandIPv6(address);
  if (!groups) return [];
  const v4 = (hi: number, lo: number) => `${hi >> 8}.${hi & 0xff}.${lo >> 8}.${lo & 0xff}`;
  const zeros = (from: number, to: number) => groups.slice(from, to).every((g) => g === 0);
  const g = (index: number) => groups[index]!;
  if (zeros(0, 5) && (g(5) === 0xffff || g(5) === 0)) {
    if (g(5) === 0 && zeros(6, 8)) return []; // :: is "unspecified", judged as IPv6
    if (g(5) === 0 && g(6) === 0 && g(7) === 1) return []; // ::1 is loopback itself
    return [v4(g(6), g(7))];
  }
  if (zeros(0, 4) && g(4) === 0xffff && g(5) === 0) return [v4(g(6), g(7))];
  if (g(0) === 0x64 && g(1) === 0xff9b && zeros(2, 6)) return [v4(g(6), g(7))];
  if (g(0) === 0x64 && g(1) === 0xff9b && g(2) === 1) {
    // RFC 6052 2.2: the IPv4 bits follow the prefix, skipping bits 64-71 (the "u" octet).
    const byte = (bit: number) => (g(bit >> 4) >> (8 - (bit & 8))) & 0xff;
    const dotted = (bits: number[]) => bits.map(byte).join('.');
    const candidates = [dotted([48, 56, 72, 80]), dotted([56, 72, 80, 88]), dotted([72, 80, 88, 96]), v4(g(6), g(7))];
    // A position the operator did not use reads the zero padding of another (0.x.x.x, "this network", routed
    // nowhere); the rest are all judged, so the worst one decides. Nothing left: refused as 0.0.0.0.
    const used = candidates.filter((candidate) => !candidate.startsWith('0.'));
    return used.length > 0 ? used : ['0.0.0.0'];
  }
  if (g(0) === 0x2002) return [v4(g(1), g(2))];
  if (g(0) === 0x2001 && g(1) === 0) return [v4(g(6) ^ 0xffff, g(7) ^ 0xffff)];
  return [];
}

/** The eight 16-bit groups of an IPv6 address, or null. */
function expandIPv6(address: string): number[] | null {
  if (isIP(address) !== 6) return null;
  let text = address.toLowerCase();
  const dotted = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text);
  if (dotted) {
    const [a, b, c, d] = dotted.slice(1).map(Number) as [number, number, number, number];
    text = `${text.slice(0, dotted.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head, tail] = text.includes('::') ? (text.split('::') as [string, string]) : [text, null];
  const parse = (part: string) => (part === '' ? [] : part.split(':').map((g) => parseInt(g, 16)));
  const left = parse(head);
  const right = tail === null ? [] : parse(tail);
  const missing = 8 - left.length - right.length;
  return tail === null ? left : [...left, ...new Array<number>(missing).fill(0), ...right];
}

export function classifyAddress(address: string): AddressClass {
  const family = isIP(address);
  if (family === 0) return 'forbidden';
  if (family === 6) {
    const inner = embeddedIPv4(address).map(classifyAddress);
    if (inner.length > 0) return inner.includes('forbidden') ? 'forbidden' : inner.includes('private') ? 'private' : 'public';
    if (FORBIDDEN.check(address, 'ipv6')) return 'forbidden';
    return PRIVATE.check(address, 'ipv6') ? 'private' : 'public';
  }
  if (FORBIDDEN.check(address, 'ipv4')) return 'forbidden';
  return PRIVATE.check(address, 'ipv4') ? 'private' : 'public';
}

export interface WebhookUrlGuardOptions {
  /** WEBHOOK_ALLOW_INSECURE: `http` and private addresses allowed (development and tests). */
  allowInsecure: boolean;
  resolve?: Resolver;
}

export interface WebhookUrlGuard {
  /** Why `url` may not receive webhooks (syntax, scheme, or an address it resolves to), or null when it may. */
  refusal(url: string): Promise<string | null>;
  /**
   * A `lookup` for `http(s).request`: resolves the name again at connect time and refuses every address `refusal`
   * would, so the connection goes only to an address that was checked (no window between check and connect).
   */
  lookup: LookupFunction;
}

const MAX_URL_LENGTH = 2048;

export function createWebhookUrlGuard({ allowInsecure, resolve = dnsResolver }: WebhookUrlGuardOptions): WebhookUrlGuard {
  const addressRefusal = (address: string): string | null => {
    const kind = classifyAddress(address);
    if (kind === 'forbidden') return `resolves to ${address}, a link-local, metadata or reserved address, which is never allowed`;
    if (kind === 'private' && !allowInsecure) {
      return `resolves to ${address}, a loopback or private address (allowed only with WEBHOOK_ALLOW_INSECURE=true)`;
    }
    return null;
  };

  const hostAddresses = async (hostname: string): Promise<ResolvedAddress[] | string> => {
    const literal = hostname.startsWith('[') ? hostname.slice(1, -1) : hostname;
    if (isIP(literal) !== 0) return [{ address: literal, family: isIP(literal) }];
    try {
      const addresses = await resolve(literal);
      return addresses.length > 0 ? addresses : `host ${literal} has no address`;
    } catch {
      return `host ${literal} cannot be resolved`;
    }
  };

  return {
    async refusal(text) {
      if (text.length > MAX_URL_LENGTH) return `must be at most ${MAX_URL_LENGTH} characters`;
      let url: URL;
      try {
        url = new URL(text);
      } catch {
        return 'must be an absolute URL';
      }
      if (url.protocol !== 'https:' && !(allowInsecure && url.protocol === 'http:')) {
        return allowInsecure ? 'must be an http or https URL' : 'must be an https URL';
      }
      if (url.username !== '' || url.password !== '') return 'must not carry a user name or password';
      if (url.hash !== '') return 'must not have a fragment';
      const addresses = await hostAddresses(url.hostname);
      if (typeof addresses === 'string') return addresses;
      for (const { address } of addresses) {
        const refused = addressRefusal(address);
        if (refused) return refused;
      }
      return null;
    },

    lookup(hostname, options, callback) {
      hostAddresses(hostname).then(
        (addresses) => {
          if (typeof addresses === 'string') return callback(Object.assign(new Error(addresses), { code: 'ENOTFOUND' }), '', 0);
          const refused = addresses.map((a) => addressRefusal(a.address)).find((reason) => reason !== null);
          if (refused) return callback(Object.assign(new Error(`webhook address refused: ${refused}`), { code: 'EACCES' }), '', 0);
          const wanted = options.family === 4 || options.family === 6 ? addresses.filter((a) => a.family === options.family) : addresses;
          if (wanted.length === 0) return callback(Object.assign(new Error(`host ${hostname} has no IPv${options.family} address`), { code: 'ENOTFOUND' }), '', 0);
          if (options.all) return (callback as unknown as (error: null, addresses: ResolvedAddress[]) => void)(null, wanted);
          return callback(null, wanted[0]!.address, wanted[0]!.family);
        },
        (error: unknown) => callback(error as NodeJS.ErrnoException, '', 0),
      );
    },
  };
}
