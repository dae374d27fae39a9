// The examples of the committed OpenAPI documents are real: every one validates against its schema (objects closed,
// so an example with a field the schema lacks fails), none is a placeholder, every model and every JSON answer has
// one. Swagger UI shows these, and a reader copies them.
import { Ajv, type ValidateFunction } from 'ajv';
import addFormats from 'ajv-formats';
import { describe, expect, it } from 'vitest';
import { OPENAPI_DOCUMENTS, readCommittedDocument } from '../../scripts/openapi-files.js';
import { toJsonSchema } from '../helpers/openapi-response-validator.js';

type Node = Record<string, unknown>;
interface MediaType {
  schema?: Node;
  example?: unknown;
  examples?: Record<string, { value?: unknown }>;
}
interface Document {
  paths: Record<string, Record<string, { requestBody?: { content?: Record<string, MediaType> }; responses?: Record<string, { content?: Record<string, MediaType> }> }>>;
  components: { schemas: Record<string, Node> };
}

const isNode = (value: unknown): value is Node => typeof value === 'object' && value !== null && !Array.isArray(value);

/** Every schema-level `example` in the document, with where it is and the schema it belongs to. */
function schemaExamples(node: unknown, where: string, found: { where: string; schema: Node; example: unknown }[] = []) {
  if (Array.isArray(node)) node.forEach((item, index) => schemaExamples(item, `${where}/${index}`, found));
  if (!isNode(node)) return found;
  if ('example' in node && ('type' in node || 'properties' in node || 'enum' in node || 'anyOf' in node || '$ref' in node)) {
    found.push({ where, schema: node, example: node.example });
  }
  for (const [key, value] of Object.entries(node)) {
    // An example's or a media type's examples' values are data, not schemas.
    if (key === 'example' || key === 'examples') continue;
    schemaExamples(value, `${where}/${key}`, found);
  }
  return found;
}

/** The placeholders Swagger UI makes up when a schema has no example, and that must never be ours. */
function placeholders(value: unknown, where = ''): string[] {
  if (value === 'string') return [`${where}: "string"`];
  if (Array.isArray(value)) return value.flatMap((item, index) => placeholders(item, `${where}[${index}]`));
  if (!isNode(value)) return [];
  return Object.entries(value).flatMap(([key, item]) => [
    ...(key.startsWith('additionalProp') ? [`${where}.${key}`] : []),
    ...placeholders(item, `${where}.${key}`),
  ]);
}

describe.each([...OPENAPI_DOCUMENTS])('the examples of openapi/$file', ({ api }) => {
  const document = readCommittedDocument<Document>(api);
  const ajv = new Ajv({ strict: false, allErrors: true, logger: false });
  (addFormats as unknown as (ajv: Ajv) => Ajv)(ajv);
  const components = { schemas: Object.fromEntries(Object.entries(document.components.schemas).map(([name, schema]) => [name, toJsonSchema(schema, true)])) };
  const validatorOf = (schema: Node): ValidateFunction => ajv.compile({ ...(toJsonSchema(schema, true) as Node), components });
  const refused = (schema: Node, example: unknown): string | undefined => {
    const validate = validatorOf(schema);
    return validate(example) ? undefined : ajv.errorsText(validate.errors);
  };

  const mediaTypes: { where: string; media: MediaType }[] = Object.entries(document.paths).flatMap(([path, operations]) =>
    Object.entries(operations).flatMap(([method, operation]) => [
      ...Object.entries(operation.requestBody?.content ?? {}).map(([type, media]) => ({ where: `${method.toUpperCase()} ${path} request ${type}`, media })),
      ...Object.entries(operation.responses ?? {}).flatMap(([status, response]) =>
        Object.entries(response.content ?? {}).map(([type, media]) => ({ where: `${method.toUpperCase()} ${path} ${status} ${type}`, media })),
      ),
    ]),
  );

  it('gives every model (component schema) an example that validates against it', () => {
    const violations: string[] = [];
    for (const [name, schema] of Object.entries(document.components.schemas)) {
      if (!('example' in schema)) {
        violations.push(`${name}: no example`);
        continue;
      }
      const problem = refused(schema, schema.example);
      if (problem) violations.push(`${name}: ${problem}`);
    }
    expect(violations).toEqual([]);
  });

  it('validates every schema-level example, nested ones included, against the schema it sits in', () => {
    const found = schemaExamples(document, '#');
    expect(found.length).toBeGreaterThan(0);
    const violations = found.flatMap(({ where, schema, example }) => {
      const problem = refused(schema, example);
      return problem ? [`${where}: ${problem}`] : [];
    });
    expect(violations).toEqual([]);
  });

  it('validates every media-type example of requests and responses against its schema', () => {
    const violations: string[] = [];
    for (const { where, media } of mediaTypes) {
      if (!media.schema) continue;
      const examples = [
        ...(media.example !== undefined ? [['example', media.example] as const] : []),
        ...Object.entries(media.examples ?? {}).map(([name, example]) => [name, example.value] as const),
      ];
      for (const [name, example] of examples) {
        const problem = refused(media.schema, example);
        if (problem) violations.push(`${where} ${name}: ${problem}`);
      }
    }
    expect(violations).toEqual([]);
  });

  it('shows an example of every JSON answer: its own, or its model\'s (a page\'s items\' model)', () => {
    const exampleOf = (schema: Node | undefined): unknown => {
      if (!schema) return undefined;
      if ('example' in schema) return schema.example;
      if (typeof schema.$ref === 'string') return exampleOf(document.components.schemas[schema.$ref.replace('#/components/schemas/', '')]);
      if (schema.type === 'array' && isNode(schema.items)) {
        const item = exampleOf(schema.items);
        return item === undefined ? undefined : [item];
      }
      return undefined;
    };
    const violations = mediaTypes
      .filter(({ where }) => !where.includes(' request '))
      .filter(({ where, media }) => /json$/.test(where) && media.example === undefined && Object.keys(media.examples ?? {}).length === 0 && exampleOf(media.schema) === undefined)
      .map(({ where }) => where);
    expect(violations).toEqual([]);
  });

  it('holds no placeholder: no "string" value, no additionalProp key', () => {
    const all = [
      ...Object.entries(document.components.schemas).map(([name, schema]) => [name, schema.example] as const),
      ...schemaExamples(document, '#').map(({ where, example }) => [where, example] as const),
      ...mediaTypes.flatMap(({ where, media }) => [
        [where, media.example] as const,
        ...Object.entries(media.examples ?? {}).map(([name, example]) => [`${where} ${name}`, example.value] as const),
      ]),
    ];
    expect(all.flatMap(([where, example]) => placeholders(example, where))).toEqual([]);
  });
});

describe('the example check', () => {
  it('refuses an example its schema does not allow, and finds a placeholder', () => {
    // The Ticket model references Command, Channel, Schedule, TicketStatus: resolved as the tests above do.
    const schemas = readCommittedDocument<Document>('operatorapi').components.schemas;
    const ticket = schemas.Ticket!;
    const full = new Ajv({ strict: false, allErrors: true, logger: false }).compile({
      ...(toJsonSchema(ticket, true) as Node),
      components: { schemas: Object.fromEntries(Object.entries(schemas).map(([name, schema]) => [name, toJsonSchema(schema, true)])) },
    });
    expect(full(ticket.example)).toBe(true);
    expect(full({ ...(ticket.example as Node), commands: ['kick'] })).toBe(false);
    expect(full({ ...(ticket.example as Node), extra: 1 })).toBe(false);
    expect(placeholders({ a: 'string', b: { additionalProp1: 'x' } })).toEqual(['.a: "string"', '.b.additionalProp1']);
  });
});

describe('the Device API examples', () => {
  it('hold a credential really signed by the example key set, with the example ticket\'s claims', async () => {
    const { compactVerify, importJWK } = await import('jose');
    const schemas = readCommittedDocument<Document>('deviceapi').components.schemas;
    const ticket = schemas.DownloadedTicket!.example as { credential: string; id: string; securedObjectId: string; mobileDeviceId: string };
    const [key] = (schemas.KeySet!.example as { keys: Record<string, string>[] }).keys;
    const { payload, protectedHeader } = await compactVerify(ticket.credential, await importJWK(key!, key!.alg));
    expect(protectedHeader).toEqual(schemas.CredentialHeader!.example);
    const claims = JSON.parse(new TextDecoder().decode(payload)) as Record<string, unknown>;
    expect(claims).toMatchObject({ jti: ticket.id, aud: ticket.securedObjectId, sub: ticket.mobileDeviceId });
    const { win: _win, ...claimsExample } = schemas.CredentialClaims!.example as Record<string, unknown>;
    expect(claims).toEqual(claimsExample);
  });
});
