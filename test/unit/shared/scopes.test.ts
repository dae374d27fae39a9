// The scope vocabulary and the RFC 6749 3.3 scope parameter, without an app.
import { describe, expect, it } from 'vitest';
import {
  ACCESS_SCOPES,
  ALL_SCOPES,
  DEVICE_SCOPES,
  MANAGEMENT_SCOPES,
  OPERATOR_SCOPES,
  isAccessScope,
  isKnownScope,
  isOperatorScope,
  parseScopeParameter,
  READ_SCOPES,
  ROLE_SCOPES,
  USER_ROLES,
} from '../../../src/shared/scopes.js';

describe('parseScopeParameter (RFC 6749 3.3)', () => {
  it('splits on single spaces and drops repeats, keeping the first order', () => {
    expect(parseScopeParameter('tokens:read sync tokens:read')).toEqual(['tokens:read', 'sync']);
  });

  it('refuses what is not a scope-token list: empty, leading, trailing or double spaces, quote, backslash, non-ASCII', () => {
    for (const value of ['', ' a', 'a ', 'a  b', 'a\tb', 'a"b', 'a\\b', 'tökens', 'a\nb']) {
      expect(parseScopeParameter(value), JSON.stringify(value)).toBeNull();
    }
  });
});

describe('the scope vocabulary (docs/api-reference.md 3.6)', () => {
  it('knows every scope of both APIs, and only those', () => {
    for (const scope of [...OPERATOR_SCOPES, ...ACCESS_SCOPES]) expect(isKnownScope(scope)).toBe(true);
    expect(isKnownScope('tokens:write')).toBe(false);
    expect(new Set(ALL_SCOPES).size).toBe(ALL_SCOPES.length);
  });

  it('puts devices:read in both APIs and the Device API scopes in the operator list', () => {
    expect(isOperatorScope('devices:read') && isAccessScope('devices:read')).toBe(true);
    for (const scope of DEVICE_SCOPES) expect(isOperatorScope(scope)).toBe(true);
    expect(isAccessScope('sync')).toBe(false);
    expect(isOperatorScope('offline')).toBe(false);
  });

  it('keeps tokens:introspect out of both APIs: a permission at the introspection endpoint, never in an access token', () => {
    expect(isKnownScope('tokens:introspect')).toBe(true);
    expect(isOperatorScope('tokens:introspect') || isAccessScope('tokens:introspect')).toBe(false);
    expect(MANAGEMENT_SCOPES).not.toContain('tokens:introspect');
  });

  it('gives the management client Operator API scopes only, none of the Device API', () => {
    for (const scope of MANAGEMENT_SCOPES) expect(isOperatorScope(scope)).toBe(true);
    expect(MANAGEMENT_SCOPES.filter((scope) => DEVICE_SCOPES.includes(scope))).toEqual([]);
  });
});

// docs/api-reference.md 13.1: the console roles' scope sets, defined once.
describe('console role scopes', () => {
  it('admin holds every Operator and Access API scope but those a device or lock holds for itself, and offline', () => {
    const everything = new Set<string>([...OPERATOR_SCOPES, ...ACCESS_SCOPES]);
    for (const scope of ['sync', 'tokens:download', 'keys:register', 'offline']) everything.delete(scope);
    expect([...ROLE_SCOPES.admin].sort()).toEqual([...everything].sort());
  });

  it('operator is admin without clients:manage, users:manage and webhooks:manage', () => {
    expect([...ROLE_SCOPES.operator].sort()).toEqual(
      ROLE_SCOPES.admin.filter((scope) => !['clients:manage', 'users:manage', 'webhooks:manage'].includes(scope)).sort(),
    );
  });

  it('viewer holds the read scopes only, of both APIs', () => {
    expect([...ROLE_SCOPES.viewer].sort()).toEqual([...READ_SCOPES].sort());
    expect(ROLE_SCOPES.viewer.every((scope) => scope.endsWith(':read'))).toBe(true);
    expect(ROLE_SCOPES.viewer.some(isOperatorScope)).toBe(true);
    expect(ROLE_SCOPES.viewer.some(isAccessScope)).toBe(true);
  });

  it('each role is a subset of the one above it', () => {
    expect(USER_ROLES).toEqual(['admin', 'operator', 'viewer']);
    expect(ROLE_SCOPES.operator.every((scope) => ROLE_SCOPES.admin.includes(scope))).toBe(true);
    expect(ROLE_SCOPES.viewer.every((scope) => ROLE_SCOPES.operator.includes(scope))).toBe(true);
  });
});
