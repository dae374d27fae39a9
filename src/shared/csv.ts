// A strict RFC 4180 reader for bulk jobs (docs/api-reference.md 14): comma-separated fields, double-quoted fields with
// `""` for a quote, records ended by CRLF (or LF, as most exports on Unix write them), a header row first.

/** Why a body is not the CSV this service reads, with the line (1 = the header) where it went wrong. */
export class CsvError extends Error {
  constructor(
    message: string,
    readonly line: number,
  ) {
    super(message);
    this.name = 'CsvError';
  }
}

export interface CsvTable {
  /** The header row's names, as written (not trimmed: a stray space is a different name). */
  header: string[];
  /** The records after the header, each with as many fields as the header; `line` is where it starts. */
  rows: { line: number; fields: string[] }[];
}

/** Delimiters other exports use; a header holding one of them and no comma was written with it. */
const OTHER_DELIMITERS: [string, string][] = [
  [';', 'semicolon'],
  ['\t', 'tab'],
  ['|', 'vertical bar'],
];

/**
 * Parses `text` (already decoded as UTF-8, without a byte-order mark) into its header and records. Refuses what
 * RFC 4180 section 2 does not allow: a quote inside an unquoted field, text after a closing quote, a quoted field
 * never closed, a record with another number of fields than the header. Blank lines at the very end are ignored.
 * `maxRows` bounds the work: parsing stops with an error as soon as a record past it begins.
 */
export function parseCsv(text: string, maxRows = Number.POSITIVE_INFINITY): CsvTable {
  const records: { line: number; fields: string[]; blank: boolean }[] = [];
  let fields: string[] = [];
  let field = '';
  /** The field being read was quoted: nothing may follow its closing quote but a comma or the end of the record. */
  let quoted = false;
  let line = 1;
  let recordLine = 1;
  let index = 0;
  const length = text.length;
  const endRecord = () => {
    const blank = fields.length === 0 && field === '' && !quoted;
    fields.push(field);
    records.push({ line: recordLine, fields, blank });
    if (records.length > maxRows + 1) throw new CsvError(`The body has more than ${maxRows} records after the header.`, recordLine);
    fields = [];
    field = '';
    quoted = false;
  };
  while (index < length) {
    const char = text[index]!;
    if (char === '"') {
      if (field !== '' || quoted) throw new CsvError('A quote inside an unquoted field: quote the whole field and double the quote ("").', line);
      index += 1;
      let closed = false;
      while (index < length) {
        const inner = text[index]!;
        if (inner === '"') {
          if (text[index + 1] === '"') {
            field += '"';
            index += 2;
            continue;
          }
          index += 1;
          closed = true;
          break;
        }
        if (inner === '\n') line += 1;
        field += inner;
        index += 1;
      }
      if (!closed) throw new CsvError('A quoted field is never closed.', line);
      const next = text[index];
      if (next !== undefined && next !== ',' && next !== '\n' && next !== '\r') {
        throw new CsvError('Text after the closing quote of a field: a field is either quoted whole or not at all.', line);
      }
      quoted = true;
      continue;
    }
    if (char === ',') {
      fields.push(field);
      field = '';
      quoted = false;
      index += 1;
      continue;
    }
    if (char === '\r' || char === '\n') {
      if (char === '\r' && text[index + 1] !== '\n') throw new CsvError('A carriage return not followed by a line feed.', line);
      index += char === '\r' ? 2 : 1;
      endRecord();
      line += 1;
      recordLine = line;
      continue;
    }
    field += char;
    index += 1;
  }
  if (field !== '' || quoted || fields.length > 0) endRecord();
  // Blank lines at the end (an export's trailing newlines) hold no record.
  while (records.length > 0 && records[records.length - 1]!.blank) records.pop();
  const [headerRecord, ...rest] = records;
  const rows = rest.map(({ line: at, fields: values }) => ({ line: at, fields: values }));
  if (!headerRecord) throw new CsvError('The body is empty: a header row naming the columns comes first.', 1);
  const header = headerRecord.fields;
  if (headerRecord.blank) throw new CsvError('The header row is empty: it names the columns.', 1);
  if (header.length === 1) {
    const other = OTHER_DELIMITERS.find(([delimiter]) => header[0]!.includes(delimiter));
    if (other) throw new CsvError(`The header is separated by ${JSON.stringify(other[0])} (${other[1]}): fields are separated by commas (RFC 4180).`, 1);
  }
  for (const row of rows) {
    if (row.fields.length !== header.length) {
      throw new CsvError(`The record has ${row.fields.length} fields; the header has ${header.length}.`, row.line);
    }
  }
  return { header, rows };
}
