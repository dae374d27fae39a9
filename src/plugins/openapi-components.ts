// Names the models of an OpenAPI document: every schema with a `title` becomes `components.schemas.<title>`, referenced.
//
// Why titles and not `$id` + `addSchema`: the request validator (plugins/validation.ts) is one Ajv per process that
// never sees Fastify's shared schemas, and ids nested in route schemas would be registered there once per route.
// A `title` is an annotation (JSON Schema 2020-12 section 9.1) that neither Ajv nor fast-json-stringify acts on, so
// naming a model changes the documents only, never what a route accepts or answers. The Problem schema, which only
// responses use, keeps its `$id` and `addSchema` (api-docs.ts).

import { DOCUMENTED_ENUM } from '../shared/documented-enum.js';

type Node = Record<string, unknown>;

const isNode = (value: unknown): value is Node => typeof value === 'object' && value !== null && !Array.isArray(value);

/** Keywords whose value is one subschema, a list of them, or a map of them (OpenAPI 3.0.3 section 4.7.24). */
const ONE_SUBSCHEMA = ['items', 'additionalProperties', 'not'];
const SUBSCHEMA_LISTS = ['allOf', 'anyOf', 'oneOf'];
const SUBSCHEMA_MAPS = ['properties'];

/** The schema without what may differ between two uses of one model: its example (a response carries it outside). */
function comparable(schema: Node): string {
  const { example: _example, ...rest } = schema;
  return JSON.stringify(rest);
}

const COMPONENT_PREFIX = '#/components/schemas/';

class Namer {
  readonly named = new Map<string, Node>();

  schema(value: unknown): unknown {
    if (!isNode(value)) return value;
    const result: Node = { ...value };
    for (const key of ONE_SUBSCHEMA) if (isNode(result[key])) result[key] = this.schema(result[key]);
    for (const key of SUBSCHEMA_LISTS) if (Array.isArray(result[key])) result[key] = (result[key] as unknown[]).map((sub) => this.schema(sub));
    for (const key of SUBSCHEMA_MAPS) {
      const map = result[key];
      if (isNode(map)) result[key] = Object.fromEntries(Object.entries(map).map(([name, sub]) => [name, this.schema(sub)]));
    }
    if (Array.isArray(result[DOCUMENTED_ENUM])) {
      result.enum = result[DOCUMENTED_ENUM];
      delete result[DOCUMENTED_ENUM];
    }
    if (typeof result.title !== 'string') return result;
    const name = result.title;
    const known = this.named.get(name);
    if (known === undefined) this.named.set(name, result);
    else if (comparable(known) !== comparable(result)) {
      // Two different models under one name would give a generated client one type for both: refuse to build.
      throw new Error(`Two different schemas are titled ${name}: give each model its own title`);
    } else if (known.example === undefined && result.example !== undefined) known.example = result.example;
    return { $ref: `${COMPONENT_PREFIX}${name}` };
  }

  /** The media types of a request body or response: their schemas named, their examples left where they are. */
  content(value: unknown): void {
    if (!isNode(value) || !isNode(value.content)) return;
    for (const media of Object.values(value.content)) {
      if (!isNode(media)) continue;
      // A route answering `{ ...Model, description }` describes its response, not the model: the response keeps it.
      if (isNode(media.schema) && media.schema.description === value.description) {
        const { description: _description, ...schema } = media.schema;
        media.schema = schema;
      }
      media.schema = this.schema(media.schema);
      // @fastify/swagger moves a top-level schema's example to the media type; a model's example belongs to the model,
      // where every use of it (a page's items, another model's member) shows it too.
      const ref = isNode(media.schema) && typeof media.schema.$ref === 'string' ? media.schema.$ref : undefined;
      const model = ref === undefined ? undefined : this.named.get(ref.slice(COMPONENT_PREFIX.length));
      if (model !== undefined && media.example !== undefined) {
        if (model.example === undefined) model.example = media.example;
        if (JSON.stringify(model.example) === JSON.stringify(media.example)) delete media.example;
      }
    }
  }
}

/** A copy of `document` whose titled schemas are components, sorted by name, and referenced where they were. */
export function nameDocumentSchemas<Document>(document: Document, extra: unknown[] = []): Document {
  const copy = structuredClone(document) as Node;
  const namer = new Namer();
  for (const schema of extra) namer.schema(documentationSchema(schema));
  const components = (isNode(copy.components) ? copy.components : {}) as Node;
  const existing = (isNode(components.schemas) ? components.schemas : {}) as Node;
  for (const [name, schema] of Object.entries(existing)) {
    if (!isNode(schema)) continue;
    // A component already listed under its own name (Problem) keeps it; its subschemas are named like any other.
    const { title, ...rest } = schema;
    const named = namer.schema(rest) as Node;
    namer.named.set(name, title === undefined ? named : { title, ...named });
  }
  for (const operations of Object.values(isNode(copy.paths) ? copy.paths : {})) {
    if (!isNode(operations)) continue;
    for (const operation of Object.values(operations)) {
      if (!isNode(operation)) continue;
      namer.content(operation.requestBody);
      for (const response of Object.values(isNode(operation.responses) ? operation.responses : {})) namer.content(response);
    }
  }
  const schemas = Object.fromEntries([...namer.named.entries()].sort(([a], [b]) => a.localeCompare(b)));
  copy.components = { ...components, schemas };
  return copy as Document;
}

/**
 * A TypeBox schema as an OpenAPI 3.0 Schema Object, for a model no route carries: JSON only (TypeBox's symbol keys
 * dropped) and its first `examples` entry as `example`, as @fastify/swagger does for route schemas.
 */
export function documentationSchema(schema: unknown): unknown {
  const plain = JSON.parse(JSON.stringify(schema)) as unknown;
  const convert = (value: unknown): unknown => {
    if (Array.isArray(value)) return value.map(convert);
    if (!isNode(value)) return value;
    const result: Node = {};
    for (const [key, sub] of Object.entries(value)) {
      if (key === 'examples' && Array.isArray(sub)) result.example = sub[0];
      else if (key === 'example') result.example = sub;
      else result[key] = convert(sub);
    }
    return result;
  };
  return convert(plain);
}
