// Schema validation: bodies are checked strictly (no type coercion, unknown fields refused); query and path
// parameters arrive as strings, so they are coerced to the declared types.
import type { FastifySchemaCompiler } from 'fastify';
import { Ajv, type Options } from 'ajv';
import addFormats from 'ajv-formats';

const shared: Options = {
  allErrors: true, // docs/api-reference.md 4.3: name every bad field, not only the first
  removeAdditional: false, // docs/api-reference.md 7.2: unknown fields are a 400, never silently dropped
  useDefaults: true,
  strict: false, // TypeBox adds keywords (e.g. `kind`) that are not JSON Schema
};

function withFormats(ajv: Ajv): Ajv {
  (addFormats as unknown as (ajv: Ajv) => Ajv)(ajv);
  return ajv;
}

const bodyAjv = withFormats(new Ajv({ ...shared, coerceTypes: false }));
const parameterAjv = withFormats(new Ajv({ ...shared, coerceTypes: 'array' }));

type Schema = Record<string | symbol, unknown>;

const isSchema = (value: unknown): value is Schema => typeof value === 'object' && value !== null && !Array.isArray(value);

/** Keywords whose value is one subschema, a list of them, or a map of them (JSON Schema 2020-12 and draft-07). */
const ONE_SUBSCHEMA = ['items', 'additionalItems', 'contains', 'additionalProperties', 'propertyNames', 'not', 'if', 'then', 'else'];
const SUBSCHEMA_LISTS = ['items', 'prefixItems', 'allOf', 'anyOf', 'oneOf'];
const SUBSCHEMA_MAPS = ['properties', 'patternProperties', 'dependentSchemas', '$defs', 'definitions'];
/** The keywords that look at an array's items: each of them runs once per item. */
const ITEM_KEYWORDS = ['items', 'prefixItems', 'additionalItems', 'contains', 'uniqueItems'];

const bounded = new WeakMap<object, Schema>();

/**
 * The schema Ajv compiles: every array with `maxItems` examines its items only when it is within that bound
 * (`if: {maxItems}, then: {items…}`). With `allErrors`, Ajv would otherwise report every bad item of an array far over
 * its limit: a 1 MiB body of 45,000 bad commands made 45,000 errors to collect and render (docs/security-cases.md G46).
 * An array over its limit is named once, by its length. The documents keep the original schema (OpenAPI 3.0 has no
 * `if`); the `if` error Ajv adds when `then` fails repeats the item errors and is left out by problem-details.ts.
 */
export function boundItems(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(boundItems);
  if (!isSchema(schema)) return schema;
  const known = bounded.get(schema);
  if (known) return known;
  // Own enumerable keys, symbols included: TypeBox marks its schemas with a symbol (`Kind`).
  const result: Schema = { ...schema };
  for (const key of ONE_SUBSCHEMA) if (isSchema(result[key])) result[key] = boundItems(result[key]);
  for (const key of SUBSCHEMA_LISTS) if (Array.isArray(result[key])) result[key] = boundItems(result[key]);
  for (const key of SUBSCHEMA_MAPS) {
    const map = result[key];
    if (isSchema(map)) result[key] = Object.fromEntries(Object.entries(map).map(([name, sub]) => [name, boundItems(sub)]));
  }
  const itemKeywords = ITEM_KEYWORDS.filter((key) => key in result);
  if (typeof result.maxItems === 'number' && itemKeywords.length > 0) {
    const then: Schema = {};
    for (const key of itemKeywords) {
      then[key] = result[key];
      delete result[key];
    }
    const condition = { if: { maxItems: result.maxItems }, then };
    // A schema with a condition of its own keeps it; ours joins it through allOf.
    if ('if' in result) result.allOf = [...(Array.isArray(result.allOf) ? result.allOf : []), condition];
    else Object.assign(result, condition);
  }
  bounded.set(schema, result);
  return result;
}

export const validatorCompiler: FastifySchemaCompiler<unknown> = ({ schema, httpPart }) => {
  const ajv = httpPart === 'body' ? bodyAjv : parameterAjv;
  return ajv.compile(boundItems(schema) as object) as ReturnType<FastifySchemaCompiler<unknown>>;
};
