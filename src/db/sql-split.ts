// Splits a migration file into its statements, so the migrator sends one statement per query (Citus plans and
// propagates a distributed table's DDL per statement; docs/scaling.md).

export class SqlSplitError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'SqlSplitError';
  }
}

/** `$tag$` or `$$` at `position`, as PostgreSQL's lexer reads a dollar-quote opener; undefined when there is none. */
function dollarTag(sql: string, position: number): string | undefined {
  const match = /^\$([A-Za-z_\u0080-\uffff][A-Za-z_0-9\u0080-\uffff]*)?\$/.exec(sql.slice(position, position + 130));
  return match?.[0];
}

/** True when the text between two statement ends holds nothing but white space and comments. */
function blank(statement: string): boolean {
  return statement.trim() === '';
}

/**
 * The statements of `sql`, in order, each without its terminating semicolon and trimmed; comments stay with the
 * statement they precede, a trailing comment alone is dropped. Semicolons inside string constants ('…', E'…' with
 * backslash escapes), quoted identifiers, dollar-quoted bodies ($$…$$, $tag$…$tag$) and comments (--, nested /* *\/)
 * do not end a statement. A body written as `BEGIN ATOMIC … END` is refused: its inner semicolons look like ends.
 */
export function splitSqlStatements(sql: string): string[] {
  const statements: string[] = [];
  let start = 0;
  let code = '';
  let i = 0;
  const push = (end: number) => {
    const text = sql.slice(start, end);
    if (!blank(code)) statements.push(text.trim());
    start = end + 1;
    code = '';
  };
  while (i < sql.length) {
    const char = sql[i]!;
    const next = sql[i + 1];
    if (char === '-' && next === '-') {
      const end = sql.indexOf('\n', i);
      i = end < 0 ? sql.length : end + 1;
      continue;
    }
    if (char === '/' && next === '*') {
      let depth = 1;
      let j = i + 2;
      while (j < sql.length && depth > 0) {
        if (sql[j] === '/' && sql[j + 1] === '*') {
          depth++;
          j += 2;
        } else if (sql[j] === '*' && sql[j + 1] === '/') {
          depth--;
          j += 2;
        } else {
          j++;
        }
      }
      if (depth > 0) throw new SqlSplitError('A /* comment is not closed.');
      i = j;
      continue;
    }
    if (char === "'" || char === '"') {
      // E'…' (or e'…') takes backslash escapes; a doubled quote is one quote in every kind.
      const escapes = char === "'" && /[eE]/.test(sql[i - 1] ?? '') && !/[A-Za-z0-9_$]/.test(sql[i - 2] ?? '');
      let j = i + 1;
      for (;;) {
        if (j >= sql.length) throw new SqlSplitError(`A ${char === "'" ? 'string' : 'quoted identifier'} is not closed.`);
        if (escapes && sql[j] === '\\') {
          j += 2;
          continue;
        }
        if (sql[j] === char) {
          if (sql[j + 1] === char) {
            j += 2;
            continue;
          }
          break;
        }
        j++;
      }
      code += 'x';
      i = j + 1;
      continue;
    }
    if (char === '$' && !/[A-Za-z0-9_$]/.test(sql[i - 1] ?? '')) {
      const tag = dollarTag(sql, i);
      if (tag) {
        const end = sql.indexOf(tag, i + tag.length);
        if (end < 0) throw new SqlSplitError(`A ${tag}-quoted body is not closed.`);
        code += 'x';
        i = end + tag.length;
        continue;
      }
    }
    if (char === ';') {
      if (/\bBEGIN\s+ATOMIC\b/i.test(code)) {
        throw new SqlSplitError('A BEGIN ATOMIC body cannot be split into statements; write the function body with $$ quotes.');
      }
      push(i);
      i++;
      continue;
    }
    code += char;
    i++;
  }
  if (/\bBEGIN\s+ATOMIC\b/i.test(code)) {
    throw new SqlSplitError('A BEGIN ATOMIC body cannot be split into statements; write the function body with $$ quotes.');
  }
  push(sql.length);
  return statements;
}
