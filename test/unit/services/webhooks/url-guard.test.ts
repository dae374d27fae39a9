// The webhook SSRF guard (docs/api-reference.md 10): which addresses a delivery may reach, with and without
// WEBHOOK_ALLOW_INSECURE, for literal addresses, names that resolve to them, and at connect time.
import { describe, expect, it } from 'vitest';
import { classifyAddress, createWebhookUrlGuard, type Resolver } from '../../../../src/services/webhooks/url-guard.js';
import { newWebhookSecret, sealWebhookSecret, unsealWebhookSecret } from '../../../../src/services/webhooks/signing-secrets.js';
import { secretsKeyOf } from '../../../../src/shared/crypto.js';

const resolverOf =
  (table: Record<string, string[]>): Resolver =>
  async (hostname) => {
    const addresses = table[hostname];
    if (!addresses) throw Object.assign(new Error('not found'), { code: 'ENOTFOUND' });
    return addresses.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
  };

describe('classifyAddress', () => {
  it.each([
    ['93.184.216.34', 'public'],
    ['2606:2800:220:1:248:1893:25c8:1946', 'public'],
    ['127.0.0.1', 'private'],
    ['127.255.0.9', 'private'],
    ['10.1.2.3', 'private'],
    ['172.16.0.1', 'private'],
    ['172.31.255.255', 'private'],
    ['172.32.0.1', 'public'],
    ['192.168.1.1', 'private'],
    ['100.64.0.1', 'private'],
    ['::1', 'private'],
    ['fd12:3456::1', 'private'],
    ['::ffff:127.0.0.1', 'private'],
    ['::ffff:7f00:1', 'private'],
    ['64:ff9b::a00:1', 'private'],
    ['2002:c0a8:101::1', 'private'],
    ['169.254.169.254', 'forbidden'],
    ['169.254.0.1', 'forbidden'],
    ['100.100.100.200', 'forbidden'],
    ['fe80::1', 'forbidden'],
    ['fd00:ec2::254', 'forbidden'],
    ['::ffff:169.254.169.254', 'forbidden'],
    ['0.0.0.0', 'forbidden'],
    ['::', 'forbidden'],
    ['224.0.0.1', 'forbidden'],
    ['255.255.255.255', 'forbidden'],
    ['not-an-address', 'forbidden'],
  ])('%s is %s', (address, expected) => {
    expect(classifyAddress(address)).toBe(expected);
  });
});

describe('createWebhookUrlGuard', () => {
  const resolve = resolverOf({
    'hooks.example.com': ['93.184.216.34'],
    'internal.example.com': ['10.0.0.5'],
    'mixed.example.com': ['93.184.216.34', '127.0.0.1'],
    'metadata.example.com': ['169.254.169.254'],
  });
  const strict = createWebhookUrlGuard({ allowInsecure: false, resolve });
  const insecure = createWebhookUrlGuard({ allowInsecure: true, resolve });

  it('accepts an https URL on a public address', async () => {
    expect(await strict.refusal('https://hooks.example.com/acs?x=1')).toBeNull();
    expect(await strict.refusal('https://93.184.216.34:8443/')).toBeNull();
  });

  it('refuses other schemes, credentials, fragments, non-URLs and very long URLs', async () => {
    expect(await strict.refusal('http://hooks.example.com/')).toMatch(/https/);
    expect(await insecure.refusal('ftp://hooks.example.com/')).toMatch(/http or https/);
    expect(await strict.refusal('https://user:pw@hooks.example.com/')).toMatch(/user name or password/);
    expect(await strict.refusal('https://hooks.example.com/#x')).toMatch(/fragment/);
    expect(await strict.refusal('hooks.example.com/path')).toMatch(/absolute URL/);
    expect(await strict.refusal(`https://hooks.example.com/${'a'.repeat(2100)}`)).toMatch(/2048/);
  });

  it('refuses loopback and private addresses, literal or resolved, unless insecure is allowed', async () => {
    for (const url of [
      'https://127.0.0.1/',
      'https://[::1]/',
      'https://[::ffff:127.0.0.1]/',
      'https://0x7f.0.0.1/',
      'https://2130706433/',
      'https://internal.example.com/',
      'https://mixed.example.com/',
    ]) {
      expect(await strict.refusal(url), url).toMatch(/loopback or private/);
      expect(await insecure.refusal(url), url).toBeNull();
    }
  });

  it('refuses link-local and metadata addresses even when insecure is allowed', async () => {
    for (const url of ['http://169.254.169.254/latest/meta-data/', 'http://[fe80::1]/', 'http://metadata.example.com/', 'http://0.0.0.0/']) {
      expect(await insecure.refusal(url), url).toMatch(/never allowed/);
    }
  });

  // docs/security-cases.md H55: every IPv6 form that carries an IPv4 address is judged by that address, with and
  // without WEBHOOK_ALLOW_INSECURE.
  it.each([
    // IPv4-mapped ::ffff:0:0/96 and IPv4-translated ::ffff:0:0:0/96 (RFC 2765)
    ['::ffff:a9fe:a9fe', 'forbidden'],
    ['::ffff:0:a9fe:a9fe', 'forbidden'],
    ['::ffff:0:169.254.169.254', 'forbidden'],
    ['::ffff:0:7f00:1', 'private'],
    ['::ffff:0:a00:1', 'private'],
    ['::ffff:0:5db8:d822', 'public'],
    // NAT64 well-known prefix 64:ff9b::/96 (RFC 6052)
    ['64:ff9b::a9fe:a9fe', 'forbidden'],
    ['64:ff9b::169.254.169.254', 'forbidden'],
    ['64:ff9b::7f00:1', 'private'],
    ['64:ff9b::5db8:d822', 'public'],
    // local-use NAT64 64:ff9b:1::/48 (RFC 8215), at the /96, /64, /56 and /48 positions of RFC 6052 2.2
    ['64:ff9b:1::a9fe:a9fe', 'forbidden'],
    ['64:ff9b:1::a9:fea9:fe00:0', 'forbidden'],
    ['64:ff9b:1:0:a9:fea9:fe00:0', 'forbidden'],
    ['64:ff9b:1:a9:fe:a9fe::', 'forbidden'],
    ['64:ff9b:1:a9fe:a9:fe00::', 'forbidden'],
    ['64:ff9b:1::7f00:1', 'private'],
    ['64:ff9b:1:a00:0:100::', 'private'],
    ['64:ff9b:1::5db8:d822', 'public'],
    ['64:ff9b:1::', 'forbidden'],
    // 6to4 2002::/16 (RFC 3056)
    ['2002:a9fe:a9fe::1', 'forbidden'],
    ['2002:7f00:1::1', 'private'],
    ['2002:5db8:d822::1', 'public'],
    // Teredo 2001::/32 (RFC 4380): the client address is the last 32 bits inverted
    ['2001:0:4136:e378:8000:63bf:5601:5601', 'forbidden'], // client 169.254.169.254
    ['2001:0:4136:e378:8000:63bf:80ff:fffe', 'private'], // client 127.0.0.1
    ['2001:0:4136:e378:8000:63bf:f5ff:fffe', 'private'], // client 10.0.0.1
    ['2001:0:4136:e378:8000:63bf:a247:27dd', 'public'], // client 93.184.216.34
  ])('%s carries an IPv4 address and is %s', async (address, expected) => {
    expect(classifyAddress(address)).toBe(expected);
    const url = `http://[${address}]/`;
    const insecureRefusal = await insecure.refusal(url);
    if (expected === 'forbidden') expect(insecureRefusal, url).toMatch(/never allowed/);
    else expect(insecureRefusal, url).toBeNull();
    const strictRefusal = await strict.refusal(`https://[${address}]/`);
    if (expected === 'public') expect(strictRefusal, url).toBeNull();
    else expect(strictRefusal, url).not.toBeNull();
  });

  it('refuses a name that does not resolve', async () => {
    expect(await strict.refusal('https://nowhere.example.com/')).toMatch(/cannot be resolved/);
  });

  it('checks again at connect time: a name that now resolves to a private address is refused (DNS rebinding)', async () => {
    const table: Record<string, string[]> = { 'rebind.example.com': ['93.184.216.34'] };
    const guard = createWebhookUrlGuard({ allowInsecure: false, resolve: resolverOf(table) });
    expect(await guard.refusal('https://rebind.example.com/')).toBeNull();
    table['rebind.example.com'] = ['127.0.0.1'];
    const outcome = await new Promise<{ error: NodeJS.ErrnoException | null; address: unknown }>((done) =>
      guard.lookup('rebind.example.com', { all: true }, (error, address) => done({ error, address })),
    );
    expect(outcome.error?.message).toMatch(/refused/);
    table['rebind.example.com'] = ['93.184.216.34'];
    const allowed = await new Promise<{ error: NodeJS.ErrnoException | null; address: unknown }>((done) =>
      guard.lookup('rebind.example.com', { all: true }, (error, address) => done({ error, address })),
    );
    expect(allowed.error).toBeNull();
    expect(allowed.address).toEqual([{ address: '93.184.216.34', family: 4 }]);
  });
});

describe('webhook secrets', () => {
  it('are Standard Webhooks secrets, sealed to their subscription', () => {
    const secret = newWebhookSecret();
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(Buffer.from(secret.slice(6), 'base64')).toHaveLength(32);
    const key = secretsKeyOf(Buffer.alloc(32, 7));
    const sealed = sealWebhookSecret(key, 'tenant-a', 'hook-1', secret);
    expect(sealed.toString('utf8')).not.toContain(secret.slice(6));
    expect(unsealWebhookSecret(key, 'tenant-a', 'hook-1', sealed)).toBe(secret);
    expect(() => unsealWebhookSecret(key, 'tenant-b', 'hook-1', sealed)).toThrow();
  });
});
