import type { ComponentChildren } from 'preact';

/** One column of a Table: its header and how a row fills its cell. */
export interface Column<Row> {
  header: string;
  cell(row: Row): ComponentChildren;
  /** Numbers (money, counts) align right so their digits line up. */
  numeric?: boolean;
}

/**
 * A data table with a caption (read by screen readers) and a message when empty. On phones (styles.css'
 * narrow-screen block) each row becomes a card whose cells carry their column's name (`data-label`).
 */
export function Table<Row>(props: {
  caption: string;
  columns: Column<Row>[];
  rows: Row[];
  rowKey(row: Row): string;
  empty?: string;
  /** Shows the caption visibly (default: for screen readers only). */
  showCaption?: boolean;
}) {
  return (
    <div class="table-scroll" role="region" aria-label={props.caption} tabIndex={0}>
      <table>
        <caption class={props.showCaption === true ? '' : 'visually-hidden'}>{props.caption}</caption>
        <thead>
          <tr>
            {props.columns.map((column) => (
              <th scope="col" key={column.header} class={column.numeric === true ? 'numeric' : undefined}>{column.header}</th>
            ))}
          </tr>
        </thead>
        <tbody>
          {props.rows.length === 0 ? (
            <tr><td colSpan={props.columns.length} class="empty">{props.empty ?? 'Nothing yet.'}</td></tr>
          ) : props.rows.map((row) => (
            <tr key={props.rowKey(row)}>
              {props.columns.map((column) => (
                <td key={column.header} data-label={column.header} class={column.numeric === true ? 'numeric' : undefined}>{column.cell(row)}</td>
              ))}
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
