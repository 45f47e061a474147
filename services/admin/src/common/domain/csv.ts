import { stringify } from 'csv-stringify/sync';

/**
 * One CSV cell. Text is what people or upstreams typed (names, model slugs, request ids) and is
 * neutralised against formula injection; numbers and bigints are figures the admin computed
 * (token counts, µ₹) and are written as plain decimals, so a negative margin stays a number.
 */
export type CsvCell = string | number | bigint | null;

/** The characters that make a spreadsheet read a cell as a formula (OWASP "CSV injection"). */
const formulaLead = /^[=+\-@\t\r]/;

/** A text cell a spreadsheet will show as text: a leading ' when it would start a formula. */
function neutralised(text: string): string {
  return formulaLead.test(text) ? `'${text}` : text;
}

/**
 * An RFC 4180 document (CRLF line ends, fields quoted when they hold a comma, a quote or a line
 * break, quotes doubled) with a header line, for spreadsheet exports. null is an empty cell.
 */
export function toCsv(header: readonly string[], rows: Iterable<readonly CsvCell[]>): string {
  const records: string[][] = [header.map(neutralised)];
  for (const row of rows) {
    records.push(row.map((cell) => (cell === null ? '' : typeof cell === 'string' ? neutralised(cell) : cell.toString())));
  }
  // csv-stringify quotes a field holding the record delimiter (CRLF) but not a lone CR or LF;
  // RFC 4180 readers need those quoted too.
  return stringify(records, { record_delimiter: 'windows', quoted_match: /[\r\n]/ });
}
