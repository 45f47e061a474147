import { describe, expect, it } from 'vitest';
import { reasoningControlsProblem } from './reasoning-controls.ts';

describe('reasoningControlsProblem', () => {
  it('takes each provider kind\'s own effort levels, thinking on anthropic only, nothing on an embedding model', () => {
    expect(reasoningControlsProblem('openai', 'chat', ['minimal', 'low', 'xhigh'], [])).toBeUndefined();
    expect(reasoningControlsProblem('anthropic', 'chat', ['low', 'max'], ['enabled', 'adaptive'])).toBeUndefined();
    expect(reasoningControlsProblem('vllm', 'chat', undefined, undefined)).toBeUndefined();
    expect(reasoningControlsProblem('anthropic', 'chat', ['minimal'], [])?.param).toBe('reasoning_efforts');
    expect(reasoningControlsProblem('openai_compatible', 'chat', ['max'], [])?.param).toBe('reasoning_efforts');
    expect(reasoningControlsProblem('openai_compatible', 'chat', [], ['adaptive'])?.param).toBe('thinking_modes');
    expect(reasoningControlsProblem('openai', 'embedding', ['low'], [])?.param).toBe('reasoning_efforts');
  });
});
