// Bulk jobs (docs/api-reference.md 14): the job types, the scope each needs, the CSV columns of each and how a CSV
// record becomes the item its single-item endpoint takes, and each item's natural key.
import { CsvError, type CsvTable } from './csv.js';

export const JOB_TYPES = ['secured-objects', 'mobile-devices', 'residents', 'lock-groups', 'access-permissions', 'tickets'] as const;
export type JobType = (typeof JOB_TYPES)[number];

/**
 * Every kind of job a tenant may read: the types it can send, and `erasure`, the job `POST /operatorapi/erasures`
 * answers (docs/api-reference.md 16.2), which the bulk-job worker never runs.
 */
export const JOB_KINDS = [...JOB_TYPES, 'erasure'] as const;
export type JobKind = (typeof JOB_KINDS)[number];

export const JOB_STATES = ['queued', 'running', 'succeeded', 'failed', 'cancelled'] as const;
export type JobState = (typeof JOB_STATES)[number];

export const ITEM_OUTCOMES = ['created', 'updated', 'unchanged', 'failed'] as const;
export type ItemOutcome = (typeof ITEM_OUTCOMES)[number];

export const isJobType = (value: string): value is JobType => (JOB_TYPES as readonly string[]).includes(value);

/**
 * What a job of each type needs besides `devices:write`: the scope of the single-item endpoint its items would go
 * to (docs/api-reference.md 4, 5).
 */
export const JOB_TYPE_SCOPES: Record<JobType, string> = {
  'secured-objects': 'devices:write',
  'mobile-devices': 'devices:write',
  residents: 'device-groups:write',
  'lock-groups': 'device-groups:write',
  'access-permissions': 'access-permissions:write',
  tickets: 'tokens:create',
};

/** How a cell is read: text as it is, an integer, a list of values separated by spaces, or JSON (a schedule). */
type ColumnKind = 'text' | 'integer' | 'list' | 'json';

interface Column {
  kind: ColumnKind;
  required: boolean;
}

const text = (required = false): Column => ({ kind: 'text', required });
const integer = (): Column => ({ kind: 'integer', required: true });
const list = (required = false): Column => ({ kind: 'list', required });
const json = (): Column => ({ kind: 'json', required: false });

/** The columns of each type: the fields of its single-item endpoint's body (docs/api-reference.md 4.1-4.3, 5). */
export const JOB_COLUMNS: Record<JobType, Record<string, Column>> = {
  'secured-objects': { id: text(), channels: list(true), localName: text(true), uuid: text(true), timeZone: text() },
  'mobile-devices': { id: text(), name: text() },
  residents: { name: text(true), mobileDeviceIds: list() },
  'lock-groups': { name: text(true), securedObjectIds: list() },
  'access-permissions': {
    residentId: text(true),
    lockGroupId: text(true),
    beginDate: integer(),
    endDate: integer(),
    commands: list(true),
    channels: list(true),
    schedule: json(),
  },
  tickets: {
    securedObjectId: text(true),
    mobileDeviceId: text(true),
    beginDate: integer(),
    endDate: integer(),
    commands: list(true),
    channels: list(true),
    schedule: json(),
  },
};

const INTEGER = /^-?\d+$/;

function cell(kind: ColumnKind, value: string): unknown {
  switch (kind) {
    case 'text':
      return value;
    case 'integer':
      // Not an integer: kept as written, so the item fails the endpoint's own validation with its own message.
      return INTEGER.test(value) ? Number(value) : value;
    case 'list':
      return value.split(' ').filter((part) => part !== '');
    case 'json':
      try {
        return JSON.parse(value) as unknown;
      } catch {
        return value;
      }
  }
}

/**
 * The items of a CSV body: header names matched to the type's columns in any order, an empty cell is an absent field.
 * A header naming an unknown column, naming one twice, or missing a required column is refused (CsvError).
 */
export function itemsFromCsv(type: JobType, table: CsvTable): Record<string, unknown>[] {
  const columns = JOB_COLUMNS[type];
  const known = Object.keys(columns);
  const seen = new Set<string>();
  for (const name of table.header) {
    if (!(name in columns)) {
      throw new CsvError(`Unknown column ${JSON.stringify(name)} for type ${type}; the columns are ${known.join(', ')}.`, 1);
    }
    if (seen.has(name)) throw new CsvError(`The column ${JSON.stringify(name)} is named twice.`, 1);
    seen.add(name);
  }
  const missing = known.filter((name) => columns[name]!.required && !seen.has(name));
  if (missing.length > 0) throw new CsvError(`Missing required column${missing.length > 1 ? 's' : ''} ${missing.join(', ')} for type ${type}.`, 1);
  return table.rows.map((row) => {
    const item: Record<string, unknown> = {};
    table.header.forEach((name, position) => {
      const value = row.fields[position]!;
      if (value !== '') item[name] = cell(columns[name]!.kind, value);
    });
    return item;
  });
}

const textOf = (value: unknown): string => (typeof value === 'string' ? value : '');

/**
 * The natural key an item is reported and found again under (docs/api-reference.md 14): the id a lock or device row
 * gives (empty when it gives none: the server makes one, and a re-run makes another), a group's name, and for a
 * permission or a ticket the pair it joins.
 */
export function itemKey(type: JobType, item: Record<string, unknown>): string {
  switch (type) {
    case 'secured-objects':
    case 'mobile-devices':
      return textOf(item.id);
    case 'residents':
    case 'lock-groups':
      return textOf(item.name);
    case 'access-permissions':
      return `${textOf(item.residentId)}/${textOf(item.lockGroupId)}`;
    case 'tickets':
      return `${textOf(item.securedObjectId)}/${textOf(item.mobileDeviceId)}`;
  }
}
