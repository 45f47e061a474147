/**
 * PromQL as the operations-signal checks read it (tests/operations-signals.test.ts): the
 * Prometheus project's own grammar in strict mode, Grafana's interval variables filled in, and
 * the vector selectors of a query with their label matchers.
 */
import type { LRParser } from '@lezer/lr';
import { parser } from '@prometheus-io/lezer-promql';

/** The PromQL parser in strict mode: a syntax error (or an unknown function) throws instead of becoming an error node. */
export const strictParser: LRParser = parser.configure({ strict: true });
/** A node of a parsed PromQL tree. */
export type SyntaxNode = ReturnType<typeof strictParser.parse>['topNode'];

/** Grafana's built-in interval variables, replaced by a sample duration so the query parses as Prometheus will see it. */
export function withGrafanaVariablesFilled(expr: string): string {
  return expr.replaceAll(/\$__(rate_interval|interval|range)\b|\$\{__(rate_interval|interval|range)\}/g, '5m');
}

/** The children of a syntax node, in order. */
function childrenOf(node: SyntaxNode): SyntaxNode[] {
  const children: SyntaxNode[] = [];
  for (let child = node.firstChild; child; child = child.nextSibling) children.push(child);
  return children;
}

/** All descendants of a node with a given node name. */
export function descendants(node: SyntaxNode, name: string): SyntaxNode[] {
  const found: SyntaxNode[] = [];
  const visit = (current: SyntaxNode) => { for (const child of childrenOf(current)) { if (child.name === name) found.push(child); visit(child); } };
  visit(node);
  return found;
}

/** A string literal's value (PromQL strings: double, single or back quotes; the checks only need plain ones). */
const stringValue = (literal: string): string => literal.slice(1, -1);

/** One vector selector: the metric it names and its label matchers. */
export type Selector = { metric: string | undefined; matchers: { label: string; op: string; value: string }[] };

/** Reads a VectorSelector node. */
export function readSelector(node: SyntaxNode, text: string): Selector {
  const identifier = node.getChild('Identifier');
  const matchers = descendants(node, 'UnquotedLabelMatcher').map((matcher) => ({
    label: text.slice(matcher.getChild('LabelName')!.from, matcher.getChild('LabelName')!.to),
    op: text.slice(matcher.getChild('MatchOp')!.from, matcher.getChild('MatchOp')!.to),
    value: stringValue(text.slice(matcher.getChild('StringLiteral')!.from, matcher.getChild('StringLiteral')!.to)),
  }));
  const byName = matchers.find((matcher) => matcher.label === '__name__' && matcher.op === '=');
  return { metric: identifier ? text.slice(identifier.from, identifier.to) : byName?.value, matchers: matchers.filter((matcher) => matcher.label !== '__name__') };
}

/** The metric names a query selects (after a successful parse). */
export function metricsOf(expr: string): string[] {
  const text = withGrafanaVariablesFilled(expr);
  return descendants(strictParser.parse(text).topNode, 'VectorSelector').map((node) => readSelector(node, text).metric ?? '');
}

/** The vector selectors of a query; none when it does not parse (queryProblems reports that). */
export function selectorsOf(expr: string): Selector[] {
  const text = withGrafanaVariablesFilled(expr);
  try {
    return descendants(strictParser.parse(text).topNode, 'VectorSelector').map((node) => readSelector(node, text));
  } catch {
    return [];
  }
}
