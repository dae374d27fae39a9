// The strict RFC 4180 reader of bulk jobs (src/shared/csv.ts) and the mapping of records to items (bulk-jobs.ts).
import { describe, expect, it } from 'vitest';
import { CsvError, parseCsv } from '../../../src/shared/csv.js';
import { itemKey, itemsFromCsv } from '../../../src/shared/bulk-jobs.js';

const errorOf = (text: string) => {
  try {
    parseCsv(text);
  } catch (error) {
    if (error instanceof CsvError) return { message: error.message, line: error.line };
    throw error;
  }
  throw new Error('parsed');
};

describe('parseCsv', () => {
  it('reads quoted fields with commas, doubled quotes and line breaks, CRLF or LF, with or without a last line end', () => {
    expect(parseCsv('a,b\r\n"x, y","say ""hi"""\r\n"two\nlines",\n')).toEqual({
      header: ['a', 'b'],
      rows: [
        { line: 2, fields: ['x, y', 'say "hi"'] },
        { line: 3, fields: ['two\nlines', ''] },
      ],
    });
    expect(parseCsv('a,b\n1,2').rows).toEqual([{ line: 2, fields: ['1', '2'] }]);
    expect(parseCsv('a\r\n""\r\n\r\n').rows).toEqual([{ line: 2, fields: [''] }]);
  });

  it('refuses what RFC 4180 does not allow, naming the line', () => {
    expect(errorOf('a,b\r\nx,y"z\r\n')).toEqual({ line: 2, message: expect.stringContaining('quote inside an unquoted field') });
    expect(errorOf('a,b\r\n"x"y,z\r\n')).toEqual({ line: 2, message: expect.stringContaining('after the closing quote') });
    expect(errorOf('a,b\r\n"x,z\r\n')).toEqual({ line: 3, message: expect.stringContaining('never closed') });
    expect(errorOf('a,b\r\nx\r\n')).toEqual({ line: 2, message: 'The record has 1 fields; the header has 2.' });
    expect(errorOf('a,b\rx,y')).toEqual({ line: 1, message: expect.stringContaining('carriage return') });
    expect(errorOf('')).toEqual({ line: 1, message: expect.stringContaining('empty') });
  });

  it('names another delimiter', () => {
    expect(errorOf('id;name\r\n1;2\r\n').message).toContain('";" (semicolon)');
    expect(errorOf('id\tname\r\n').message).toContain('(tab)');
  });

  it('stops at maxRows records after the header', () => {
    expect(parseCsv('a\n1\n2\n', 2).rows).toHaveLength(2);
    expect(() => parseCsv('a\n1\n2\n3\n', 2)).toThrow('more than 2 records');
  });
});

describe('itemsFromCsv', () => {
  it('matches columns by name in any order, reads integers, lists and JSON, leaves empty cells out', () => {
    const table = parseCsv('channels,commands,endDate,beginDate,mobileDeviceId,securedObjectId,schedule\r\nbtlespp,open  tokn,20,1x,p,l,\r\n');
    expect(itemsFromCsv('tickets', table)).toEqual([
      { channels: ['btlespp'], commands: ['open', 'tokn'], endDate: 20, beginDate: '1x', mobileDeviceId: 'p', securedObjectId: 'l' },
    ]);
  });

  it('refuses an unknown, a repeated or a missing required column', () => {
    expect(() => itemsFromCsv('mobile-devices', parseCsv('id,colour\r\n'))).toThrow('Unknown column "colour"');
    expect(() => itemsFromCsv('mobile-devices', parseCsv('id,id\r\n'))).toThrow('named twice');
    expect(() => itemsFromCsv('residents', parseCsv('mobileDeviceIds\r\n'))).toThrow('Missing required column name');
  });

  it('keys items by their natural key', () => {
    expect(itemKey('mobile-devices', { id: 'p' })).toBe('p');
    expect(itemKey('secured-objects', {})).toBe('');
    expect(itemKey('residents', { name: 'R' })).toBe('R');
    expect(itemKey('tickets', { securedObjectId: 'l', mobileDeviceId: 'p' })).toBe('l/p');
  });
});
