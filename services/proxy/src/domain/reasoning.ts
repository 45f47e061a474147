import { GatewayError } from '@gateway/errors';

// Reasoning across surfaces and upstreams (docs/surfaces/reasoning.md): each surface's fields
// (chat `reasoning_effort`, Responses `reasoning`, Messages `thinking` and `output_config.effort`)
// become one ReasoningRequest; checkReasoning judges it against what the gateway model says its
// upstream accepts (ReasoningControls), before the Reserve, and gives what the adapter forwards.

/** A thinking mode an Anthropic upstream may take besides "disabled". */
export type ThinkingMode = 'enabled' | 'adaptive';

/** What a gateway model's upstream accepts of reasoning controls (config.proto GatewayModel 26-29). */
export interface ReasoningControls {
  /** Effort levels it takes (`reasoning_effort` or Anthropic's `output_config.effort`); empty: none. */
  efforts: ReadonlySet<string>;
  /** Anthropic thinking modes it takes; empty: no extended thinking. */
  thinkingModes: ReadonlySet<ThinkingMode>;
  /** Largest thinking budget a request may give, tokens; 0: bounded by max_tokens only. */
  maxThinkingBudgetTokens: number;
  /** Whether the upstream returns its reasoning (reasoning_content, thinking blocks). */
  returnsReasoning: boolean;
}

/** A model that says nothing of reasoning (an older admin): no control is accepted. */
export const noReasoningControls: ReasoningControls = {
  efforts: new Set(), thinkingModes: new Set(), maxThinkingBudgetTokens: 0, returnsReasoning: false,
};

/** Anthropic's smallest thinking budget, tokens (its API refuses less). */
const minThinkingBudgetTokens = 1024;

/** A request's thinking, as Anthropic's Messages API spells it. */
type ThinkingRequest =
  | { type: 'enabled'; budgetTokens: number; display?: ThinkingDisplay }
  | { type: 'adaptive'; display?: ThinkingDisplay }
  | { type: 'disabled' };

/** Whether thinking text is returned ("summarized") or only its signature ("omitted"), as Anthropic's `thinking.display`. */
type ThinkingDisplay = 'summarized' | 'omitted';

/**
 * What a request asks of the model's reasoning, whichever surface it came in on. Each field
 * carries the client's own name for it (`param`), so a refusal names the field the client sent.
 */
export interface ReasoningRequest {
  effort?: {
    value: string;
    param: string;
    /** The surface's own default (Messages: "high"): asking for it asks for what any model does anyway. */
    isSurfaceDefault: boolean;
    /**
     * The surface's effort means "reason with this effort" (chat and Responses, whose upstreams
     * reason when given one): on a model with adaptive thinking it also turns that on, as
     * Anthropic pairs effort with adaptive thinking. Messages says `thinking` itself.
     */
    impliesThinking?: boolean;
  };
  thinking?: ThinkingRequest & { param: string };
}

/** What an adapter forwards of a request's reasoning, after checkReasoning. */
export interface ForwardedReasoning {
  effort?: string;
  thinking?: ThinkingRequest;
  /** The thinking is the gateway's own, implied by an effort (chat, Responses), not the client's. */
  thinkingImplied?: true;
}

/**
 * One piece of a model's reasoning, as Anthropic shapes it (the richest form): text with the
 * upstream's signature ('' when the upstream signs nothing, as OpenAI-compatible servers), or
 * redacted (encrypted) reasoning. On their way out of the gateway the signature and data are
 * sealed (domain/reasoning-seal.ts); on their way back they are opened.
 */
export type ReasoningBlock = { type: 'thinking'; thinking: string; signature: string } | { type: 'redacted_thinking'; data: string };

/** A 400 naming the client's field, in the param and at the start of the message (Anthropic's error shape has no param). */
function refuse(param: string, publicMessage: string): GatewayError {
  return new GatewayError('invalid_request', { param, publicMessage: `${param}: ${publicMessage}` });
}

/** The accepted values of a set, for an error message. */
function listed(values: ReadonlySet<string>): string {
  return [...values].map((value) => `"${value}"`).join(', ');
}

/**
 * Judges a request's reasoning against the model's controls and returns what goes upstream;
 * throws a 400 naming the client's field for a control the model's upstream does not take
 * (never a silent drop), before any Reserve. `maxTokens` is the completion budget sent upstream:
 * a thinking budget lives inside it (Anthropic's rule, and OpenAI counts reasoning tokens
 * against max_completion_tokens), so the Reserve sized on it already covers every reasoning
 * token (BOUNDED_OVERRUN). Accepted without forwarding, because they ask for what the model does
 * anyway: the surface's default effort on a model with no effort control, `thinking: adaptive`
 * on a model without adaptive thinking (the model decides how much to think; one that cannot
 * think decides none), and `thinking: disabled` on a model without extended thinking.
 */
export function checkReasoning(reasoning: ReasoningRequest | undefined, controls: ReasoningControls, maxTokens: number): ForwardedReasoning {
  const forwarded: ForwardedReasoning = {};
  if (reasoning === undefined) return forwarded;
  const { effort, thinking } = reasoning;
  if (effort !== undefined) {
    if (controls.efforts.has(effort.value)) forwarded.effort = effort.value;
    else if (controls.efforts.size === 0) {
      if (!effort.isSurfaceDefault) throw refuse(effort.param, 'this model does not take a reasoning effort.');
    } else {
      throw refuse(effort.param, `this model takes a reasoning effort of ${listed(controls.efforts)}.`);
    }
  }
  if (thinking === undefined && effort?.impliesThinking === true && forwarded.effort !== undefined && controls.thinkingModes.has('adaptive')) {
    forwarded.thinking = { type: 'adaptive' };
    forwarded.thinkingImplied = true;
  }
  if (thinking !== undefined) {
    switch (thinking.type) {
      case 'enabled': {
        const budgetParam = `${thinking.param}.budget_tokens`;
        if (!controls.thinkingModes.has('enabled')) throw refuse(thinking.param, 'this model does not take a thinking budget ("enabled" thinking).');
        if (thinking.budgetTokens < minThinkingBudgetTokens) throw refuse(budgetParam, `must be at least ${minThinkingBudgetTokens}.`);
        if (thinking.budgetTokens >= maxTokens) {
          throw refuse(budgetParam, `must be less than max_tokens (${maxTokens} for this request, after the model's context).`);
        }
        if (controls.maxThinkingBudgetTokens > 0 && thinking.budgetTokens > controls.maxThinkingBudgetTokens) {
          throw refuse(budgetParam, `this model takes a thinking budget of at most ${controls.maxThinkingBudgetTokens} tokens.`);
        }
        forwarded.thinking = { type: 'enabled', budgetTokens: thinking.budgetTokens, ...(thinking.display === undefined ? {} : { display: thinking.display }) };
        break;
      }
      case 'adaptive':
        if (controls.thinkingModes.has('adaptive')) forwarded.thinking = { type: 'adaptive', ...(thinking.display === undefined ? {} : { display: thinking.display }) };
        break;
      case 'disabled':
        if (controls.thinkingModes.size > 0) forwarded.thinking = { type: 'disabled' };
        break;
    }
  }
  return forwarded;
}
