import { describe, expect, it } from 'vitest';
import { GatewayError } from '@gateway/errors';
import { checkReasoning, noReasoningControls, type ReasoningControls, type ReasoningRequest } from './reasoning.ts';

const openAiReasoner: ReasoningControls = { efforts: new Set(['low', 'medium', 'high']), thinkingModes: new Set(), maxThinkingBudgetTokens: 0, returnsReasoning: true };
const claude: ReasoningControls = { efforts: new Set(['low', 'high']), thinkingModes: new Set(['enabled', 'adaptive']), maxThinkingBudgetTokens: 8192, returnsReasoning: true };

/** The param and message of checkReasoning's refusal, or 'accepted'. */
function refusal(reasoning: ReasoningRequest, controls: ReasoningControls, maxTokens = 4096): string {
  try {
    checkReasoning(reasoning, controls, maxTokens);
    return 'accepted';
  } catch (error) {
    expect(error).toBeInstanceOf(GatewayError);
    return `${(error as GatewayError).param ?? ''}: ${(error as GatewayError).publicMessage}`;
  }
}

const effort = (value: string, isSurfaceDefault = false, impliesThinking = false) => ({ effort: { value, param: 'reasoning_effort', isSurfaceDefault, impliesThinking } });
const thinking = (budgetTokens: number) => ({ thinking: { type: 'enabled' as const, budgetTokens, param: 'thinking' } });

describe('checkReasoning', () => {
  it('forwards what the model takes, nothing when the request asks nothing', () => {
    expect(checkReasoning(undefined, openAiReasoner, 100)).toEqual({});
    expect(checkReasoning(effort('low'), openAiReasoner, 100)).toEqual({ effort: 'low' });
    expect(checkReasoning({ ...effort('high'), ...thinking(2048) }, claude, 4096)).toEqual({ effort: 'high', thinking: { type: 'enabled', budgetTokens: 2048 } });
    // Chat and Responses effort turns adaptive thinking on where the model has it.
    expect(checkReasoning(effort('low', false, true), claude, 4096)).toEqual({ effort: 'low', thinking: { type: 'adaptive' }, thinkingImplied: true });
    expect(checkReasoning(effort('low', false, true), openAiReasoner, 4096)).toEqual({ effort: 'low' });
  });

  it('accepts without forwarding what asks for the model\'s own behaviour', () => {
    expect(checkReasoning(effort('high', true), noReasoningControls, 100)).toEqual({});
    expect(checkReasoning({ thinking: { type: 'adaptive', param: 'thinking' } }, noReasoningControls, 100)).toEqual({});
    expect(checkReasoning({ thinking: { type: 'disabled', param: 'thinking' } }, openAiReasoner, 100)).toEqual({});
    expect(checkReasoning({ thinking: { type: 'disabled', param: 'thinking' } }, claude, 100)).toEqual({ thinking: { type: 'disabled' } });
  });

  it('refuses, naming the field, what the model does not take and budgets it does not allow', () => {
    expect(refusal(effort('high'), noReasoningControls)).toBe('reasoning_effort: reasoning_effort: this model does not take a reasoning effort.');
    expect(refusal(effort('xhigh'), openAiReasoner)).toBe('reasoning_effort: reasoning_effort: this model takes a reasoning effort of "low", "medium", "high".');
    expect(refusal(thinking(2048), openAiReasoner)).toContain('thinking: thinking: this model does not take a thinking budget');
    expect(refusal(thinking(1000), claude)).toBe('thinking.budget_tokens: thinking.budget_tokens: must be at least 1024.');
    // Anthropic's rule: the budget lives inside max_tokens, so the Reserve on max_tokens covers it.
    expect(refusal(thinking(4096), claude, 4096)).toContain('thinking.budget_tokens: must be less than max_tokens (4096');
    expect(refusal(thinking(9000), claude, 16_000)).toContain('at most 8192 tokens');
    expect(refusal(thinking(8192), claude, 16_000)).toBe('accepted');
  });
});
