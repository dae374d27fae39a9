// Checks answers against the committed OpenAPI documents (openapi/*.json): the operation by method and path
// template, the response by status code (its `4XX` range or `default` otherwise), the documented headers, the media
// type, and the JSON body by the response schema. A status the operation does not document, or a body its schema refuses, is a mismatch:
// a client generated from the documents would mistype it, so the test that met it fails.
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import addFormats from 'ajv-formats';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import type { Middleware } from 'openapi-fetch';
import { DOCUMENTED_APIS, readCommittedDocument, type DocumentedApi } from '../../scripts/openapi-files.js';

type SchemaObject = Record<string, unknown>;

interface MediaTypeObject {
  schema?: SchemaObject;
}

interface HeaderObject {
  required?: boolean;
  schema?: SchemaObject;
}

interface ResponseObject {
  description?: string;
  headers?: Record<string, HeaderObject>;
  content?: Record<string, MediaTypeObject>;
}

interface OperationObject {
  operationId?: string;
  responses?: Record<string, ResponseObject>;
}

export interface OpenApiDocument {
  openapi: string;
  paths: Record<string, Record<string, OperationObject>>;
  components?: { schemas?: Record<string, SchemaObject> };
}

/** One answer as the validator sees it: the request's method and path (no query) and what came back. */
export interface AnswerToCheck {
  method: string;
  path: string;
  status: number;
  /** The Content-Type header, parameters included; absent without a body. */
  contentType: string | undefined;
  body: string;
  /** The answer's headers, names in lower case; when given, those the response documents are checked too. */
  headers?: Record<string, string>;
}

export interface ResponseValidatorOptions {
  /**
   * Object schemas with `properties` and no `additionalProperties` are checked as closed, so a field the server
   * sends but the document does not describe is a mismatch too (a generated client would not know it). Default on.
   */
  closedObjects?: boolean;
}

export class ResponseMismatchError extends Error {
  override name = 'ResponseMismatchError';
}

const HTTP_METHODS = new Set(['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace']);

interface PathTemplate {
  template: string;
  pattern: RegExp;
  parameterCount: number;
}

function compileTemplate(template: string): PathTemplate {
  let parameterCount = 0;
  const source = template
    .split(/(\{[^}]+\})/)
    .map((part) => {
      if (/^\{[^}]+\}$/.test(part)) {
        parameterCount += 1;
        return '[^/]+';
      }
      return part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
    })
    .join('');
  return { template, pattern: new RegExp(`^${source}$`), parameterCount };
}

/**
 * OpenAPI 3.0 schema objects as JSON Schema (draft-07, what Ajv speaks): `nullable: true` becomes "or null", and
 * with `closedObjects` an object that lists its properties refuses others. Objects combined by `allOf` stay open:
 * closing each part would refuse the fields the other parts add.
 */
export function toJsonSchema(schema: unknown, closedObjects: boolean, inAllOf = false): unknown {
  if (Array.isArray(schema)) return schema.map((item) => toJsonSchema(item, closedObjects, inAllOf));
  if (schema === null || typeof schema !== 'object') return schema;
  const source = schema as SchemaObject;
  const converted: SchemaObject = {};
  for (const [keyword, value] of Object.entries(source)) {
    if (keyword === 'nullable' || keyword === 'example') continue;
    if (keyword === 'properties' || keyword === 'patternProperties') {
      converted[keyword] = Object.fromEntries(
        Object.entries(value as Record<string, unknown>).map(([name, property]) => [name, toJsonSchema(property, closedObjects)]),
      );
    } else if (keyword === 'allOf') {
      converted[keyword] = toJsonSchema(value, closedObjects, true);
    } else if (['items', 'additionalProperties', 'not', 'anyOf', 'oneOf'].includes(keyword)) {
      converted[keyword] = toJsonSchema(value, closedObjects);
    } else {
      converted[keyword] = value;
    }
  }
  const combined = 'allOf' in source || 'anyOf' in source || 'oneOf' in source;
  if (closedObjects && !inAllOf && !combined && 'properties' in source && !('additionalProperties' in source)) {
    converted.additionalProperties = false;
  }
  return source.nullable === true ? { anyOf: [converted, { type: 'null' }] } : converted;
}

function mediaTypeOf(contentType: string | undefined): string | undefined {
  return contentType?.split(';')[0]?.trim().toLowerCase() || undefined;
}

function describeErrors(errors: ErrorObject[] | null | undefined, whole = '(body)'): string {
  return (errors ?? [])
    .map((error) => {
      const where = error.instancePath || whole;
      const extra = error.keyword === 'additionalProperty' || error.keyword === 'additionalProperties'
        ? ` (${String((error.params as { additionalProperty?: string }).additionalProperty)})`
        : '';
      return `${where} ${error.message ?? error.keyword}${extra}`;
    })
    .join('; ');
}

/** The validator of one OpenAPI document; `checked` lists every answer it accepted, for asserting coverage. */
export class OpenApiResponseValidator {
  readonly checked: string[] = [];
  private readonly templates: PathTemplate[];
  private readonly ajv: Ajv;
  private readonly components: unknown;
  private readonly compiled = new Map<string, ValidateFunction>();
  private readonly closedObjects: boolean;

  constructor(
    readonly name: string,
    readonly document: OpenApiDocument,
    options: ResponseValidatorOptions = {},
  ) {
    const closedObjects = options.closedObjects ?? true;
    this.closedObjects = closedObjects;
    // Literal paths before templated ones, so `/v1/residents/{id}` never shadows a literal sibling.
    this.templates = Object.keys(document.paths)
      .map(compileTemplate)
      .sort((a, b) => a.parameterCount - b.parameterCount);
    // strict: false lets OpenAPI-only keywords (`example`, `xml`, `discriminator`) through without failing compilation.
    this.ajv = new Ajv({ strict: false, allErrors: true, logger: false });
    (addFormats as unknown as (ajv: Ajv) => Ajv)(this.ajv);
    const schemas = Object.entries(document.components?.schemas ?? {});
    this.components = { schemas: Object.fromEntries(schemas.map(([name, schema]) => [name, toJsonSchema(schema, closedObjects)])) };
  }

  /** The committed document of one API (openapi/<api>.json). */
  static committed(api: DocumentedApi, options: ResponseValidatorOptions = {}): OpenApiResponseValidator {
    return new OpenApiResponseValidator(api, readCommittedDocument<OpenApiDocument>(api), options);
  }

  /** The path template and operation a request reaches, if the document has it. */
  operationFor(method: string, path: string): { template: string; operation: OperationObject } | undefined {
    const lower = method.toLowerCase();
    if (!HTTP_METHODS.has(lower)) return undefined;
    for (const { template, pattern } of this.templates) {
      if (!pattern.test(path)) continue;
      const operation = this.document.paths[template]?.[lower];
      if (operation) return { template, operation };
    }
    return undefined;
  }

  /** Throws a ResponseMismatchError unless the document describes this answer. */
  validate(answer: AnswerToCheck): void {
    const found = this.operationFor(answer.method, answer.path);
    const label = `${this.name}: ${answer.method.toUpperCase()} ${found?.template ?? answer.path} answered ${answer.status}`;
    if (!found) throw new ResponseMismatchError(`${label}, but the document has no such operation`);
    const responses = found.operation.responses ?? {};
    const statusKey = [String(answer.status), `${Math.floor(answer.status / 100)}XX`, 'default'].find((key) => key in responses);
    if (!statusKey) {
      throw new ResponseMismatchError(`${label}, a status the document does not list (${Object.keys(responses).join(', ')})`);
    }
    this.validateHeaders(label, found.template, answer, statusKey, responses[statusKey]!.headers ?? {});
    const content = responses[statusKey]!.content;
    if (!content || Object.keys(content).length === 0) {
      if (answer.body.length > 0) throw new ResponseMismatchError(`${label} with a body, but the document describes none`);
      this.checked.push(label);
      return;
    }
    const mediaType = mediaTypeOf(answer.contentType);
    if (!mediaType || !(mediaType in content)) {
      throw new ResponseMismatchError(`${label} as ${mediaType ?? 'no content type'}, but the document lists ${Object.keys(content).join(', ')}`);
    }
    const schema = content[mediaType]!.schema;
    if (schema && /[/+]json$/.test(mediaType)) {
      let body: unknown;
      try {
        body = JSON.parse(answer.body);
      } catch {
        throw new ResponseMismatchError(`${label} with a body that is not JSON: ${answer.body.slice(0, 200)}`);
      }
      const validate = this.validatorFor(found.template, answer.method, statusKey, mediaType, schema);
      if (!validate(body)) {
        throw new ResponseMismatchError(`${label} with a body its schema refuses: ${describeErrors(validate.errors)}\n${answer.body.slice(0, 500)}`);
      }
    }
    this.checked.push(label);
  }

  /**
   * Documented headers the answer carries must fit their schemas (an integer `Retry-After`, say), and a header marked
   * `required` must be there. Header values are text: integers and numbers are compared as the number they spell.
   */
  private validateHeaders(label: string, template: string, answer: AnswerToCheck, statusKey: string, headers: Record<string, HeaderObject>): void {
    if (!answer.headers) return;
    for (const [name, header] of Object.entries(headers)) {
      const value = answer.headers[name.toLowerCase()];
      if (value === undefined) {
        if (header.required) throw new ResponseMismatchError(`${label} without its required header ${name}`);
        continue;
      }
      if (!header.schema) continue;
      const numeric = header.schema.type === 'integer' || header.schema.type === 'number';
      const parsed = numeric && /^-?\d+(\.\d+)?$/.test(value.trim()) ? Number(value) : value;
      const validate = this.validatorFor(template, answer.method, statusKey, `header ${name.toLowerCase()}`, header.schema);
      if (!validate(parsed)) {
        throw new ResponseMismatchError(`${label} with header ${name}: ${JSON.stringify(value)}: ${describeErrors(validate.errors, 'it')}`);
      }
    }
  }

  /** The compiled schema of one part of a response: its body in one media type, or one header. */
  private validatorFor(template: string, method: string, statusKey: string, part: string, schema: SchemaObject): ValidateFunction {
    const key = `${method.toLowerCase()} ${template} ${statusKey} ${part}`;
    let validate = this.compiled.get(key);
    if (!validate) {
      // The document's components ride along at the root, so `#/components/schemas/...` resolves as it does in the
      // document; Ajv ignores the unknown `components` keyword itself (strict: false).
      const converted = toJsonSchema(schema, this.closedObjects) as SchemaObject;
      validate = this.ajv.compile({ ...converted, components: this.components });
      this.compiled.set(key, validate);
    }
    return validate;
  }
}

/** The validators of every committed document. */
export function committedValidators(options: ResponseValidatorOptions = {}): OpenApiResponseValidator[] {
  return DOCUMENTED_APIS.map((api) => OpenApiResponseValidator.committed(api, options));
}

/**
 * An openapi-fetch middleware: every answer the client receives is validated before the caller sees it, and a
 * mismatch rejects the call. Bodies are read from a clone, so openapi-fetch still parses the original.
 */
export function responseValidation(validator: OpenApiResponseValidator): Middleware {
  return {
    async onResponse({ request, response }) {
      validator.validate({
        method: request.method,
        path: new URL(request.url).pathname,
        status: response.status,
        contentType: response.headers.get('content-type') ?? undefined,
        body: await response.clone().text(),
        headers: Object.fromEntries(response.headers.entries()),
      });
      return undefined;
    },
  };
}

/**
 * Validates an `app.inject` answer against whichever document describes its operation. Requests no document
 * describes pass unchecked: OAuth, health, metrics, the documents themselves, and methods a path does not have
 * (tests that probe the router's 404 and 405).
 */
export function injectedResponseMismatch(validators: OpenApiResponseValidator[], response: LightMyRequestResponse): string | undefined {
  const request = response.raw.req;
  const path = new URL(request.url ?? '/', 'http://inject.test').pathname;
  const method = request.method ?? 'GET';
  const validator = validators.find((candidate) => candidate.operationFor(method, path));
  if (!validator) return undefined;
  try {
    validator.validate({
      method,
      path,
      status: response.statusCode,
      contentType: response.headers['content-type'] as string | undefined,
      body: response.body,
      headers: Object.fromEntries(Object.entries(response.headers).map(([name, value]) => [name.toLowerCase(), String(value)])),
    });
    return undefined;
  } catch (error) {
    if (error instanceof ResponseMismatchError) return error.message;
    throw error;
  }
}

/**
 * From now on `app.inject(options)` validates its answer (see injectedResponseMismatch) and rejects with the
 * mismatch, so the test that provoked it fails where it did. `inject()` without options (the chain form) and with a
 * callback stay unchecked.
 */
export function validateInjectedResponses(app: Pick<FastifyInstance, 'inject'>, validators = committedValidators()): void {
  const inject = app.inject.bind(app) as (...args: unknown[]) => unknown;
  app.inject = ((...args: unknown[]) => {
    const answer = inject(...args);
    if (args.length !== 1 || args[0] === undefined) return answer;
    return Promise.resolve(answer as PromiseLike<LightMyRequestResponse>).then((response) => {
      const mismatch = injectedResponseMismatch(validators, response);
      if (mismatch) throw new ResponseMismatchError(mismatch);
      return response;
    });
  }) as FastifyInstance['inject'];
}
