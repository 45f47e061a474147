import { describe, expect, it } from 'vitest';
import { Router, targetOf, type RouteHandler } from './router.ts';

// The rules express applied to the proxy's routes, which its clients may rely on: paths match
// whatever their case and with one trailing slash, HEAD is served by GET, parameters are decoded.

const names = new Map<RouteHandler, string>();
function named(name: string): RouteHandler {
  const handler: RouteHandler = () => {};
  names.set(handler, name);
  return handler;
}

const router = new Router();
router.add('GET', '/healthz', named('healthz'));
router.add('POST', '/v1/responses', named('create'));
router.add('GET', '/v1/responses/:id', named('get'));
router.add('DELETE', '/v1/responses/:id', named('delete'));
router.add('GET', '/v1/responses/:id/input_items', named('items'));
router.add('POST', '/v1/responses/:id/cancel', named('cancel'));
router.add('GET', '/v1/models', named('models'));
router.add('GET', '/v1/models/*slug', named('model'));
router.add('*', '/v1/completions', named('completions'));

function match(method: string, path: string): [string, string] | undefined {
  const matched = router.match(method, path);
  return matched === undefined ? undefined : [names.get(matched.handler)!, matched.param];
}

describe('Router', () => {
  it('matches fixed paths in any case, with one trailing slash, HEAD by GET', () => {
    expect(match('GET', '/healthz')).toEqual(['healthz', '']);
    expect(match('HEAD', '/HEALTHZ/')).toEqual(['healthz', '']);
    expect(match('GET', '/healthz//')).toBeUndefined();
    expect(match('POST', '/healthz')).toBeUndefined();
    expect(match('POST', '/V1/Responses/')).toEqual(['create', '']);
    expect(match('PATCH', '/v1/completions/')).toEqual(['completions', '']);
  });

  it('takes a segment parameter of one or more characters without a slash, decoded, its case kept', () => {
    expect(match('GET', '/v1/responses/Resp_1')).toEqual(['get', 'Resp_1']);
    expect(match('DELETE', '/v1/responses/r%20x/')).toEqual(['delete', 'r x']);
    expect(match('GET', '/v1/responses/')).toBeUndefined();
    expect(match('GET', '/v1/responses//')).toBeUndefined();
    expect(match('GET', '/V1/RESPONSES/a/INPUT_ITEMS/')).toEqual(['items', 'a']);
    expect(match('GET', '/v1/responses/input_items')).toEqual(['get', 'input_items']);
    expect(match('GET', '/v1/responses//input_items')).toBeUndefined();
    expect(match('POST', '/v1/responses/a/cancel')).toEqual(['cancel', 'a']);
    expect(match('GET', '/v1/responses/a/cancel')).toBeUndefined();
    expect(match('PUT', '/v1/responses/a')).toBeUndefined();
  });

  it('gives a wildcard the rest of the path as sent, trailing slash included, decoded', () => {
    expect(match('GET', '/v1/models/')).toEqual(['models', '']);
    expect(match('GET', '/v1/models/org%2Fmodel/x')).toEqual(['model', 'org/model/x']);
    expect(match('GET', '/v1/models/chat/')).toEqual(['model', 'chat/']);
    expect(match('GET', '/v1/models//')).toEqual(['model', '/']);
    expect(match('HEAD', '/V1/MODELS/Chat')).toEqual(['model', 'Chat']);
  });
});

describe('targetOf', () => {
  it('splits an origin-form target at its first ?, and leaves the rest to url.parse', () => {
    expect(targetOf('/v1/models')).toEqual({ path: '/v1/models', search: undefined });
    expect(targetOf('/v1/x?a=1?b')).toEqual({ path: '/v1/x', search: 'a=1?b' });
    expect(targetOf('/v1/models#frag')).toEqual({ path: '/v1/models', search: undefined });
    expect(targetOf('http://host/v1/models?x=1')).toEqual({ path: '/v1/models', search: 'x=1' });
    expect(targetOf('*')).toEqual({ path: '*', search: undefined });
  });
});
