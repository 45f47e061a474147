/**
 * Strict schema validation of Kubernetes objects with the validators kubernetes-models ships
 * (the Kubernetes, cert-manager and Prometheus Operator OpenAPI schemas compiled by ajv), plus
 * the one rule those validators leave out: a field the schema does not define is an error.
 *
 * The compiled validators accept unknown fields because the upstream schemas list `properties`
 * without `additionalProperties: false`. Rather than keep field lists by hand, the validator is
 * run on a recording view of the object: ajv's generated code reads every property its schema
 * lists (`data.x !== undefined`) and enumerates the keys of a map (`additionalProperties`). So
 * after one run, for each object in the input: keys were enumerated -> a map, every key allowed;
 * some properties were read -> a closed object, any other key is unknown; nothing was read -> a
 * free-form object (x-kubernetes-preserve-unknown-fields, `type: object` without properties),
 * every key allowed.
 */

/** A kubernetes-models class: its prototype's validate() runs the compiled schema on `this`. */
export type SchemaClass = { prototype: { validate(this: unknown): void } };

/** What the schema says about one object: schema errors and the JSON paths of fields it does not define. */
export interface StrictResult {
  /** Schema violations as kubernetes-models reports them (empty when valid). */
  errors: string[];
  /** JSON-pointer paths (`/spec/template/spec/containers/0/bogus`) of fields the schema does not define. */
  unknownFields: string[];
}

/** Validates one object against a kubernetes-models class's schema, unknown fields included. */
export function validateStrictly(schemaClass: SchemaClass, object: unknown): StrictResult {
  const propertiesRead = new Map<object, Set<string>>();
  const enumerated = new Set<object>();
  const views = new WeakMap<object, object>();
  const view = (target: object): object => {
    let proxy = views.get(target);
    if (proxy === undefined) {
      proxy = new Proxy(target, {
        get(inner, key, receiver) {
          if (typeof key === 'string') (propertiesRead.get(inner) ?? propertiesRead.set(inner, new Set()).get(inner)!).add(key);
          const value: unknown = Reflect.get(inner, key, receiver);
          return value !== null && typeof value === 'object' ? view(value) : value;
        },
        has(inner, key) {
          if (typeof key === 'string') (propertiesRead.get(inner) ?? propertiesRead.set(inner, new Set()).get(inner)!).add(key);
          return Reflect.has(inner, key);
        },
        ownKeys(inner) {
          enumerated.add(inner);
          return Reflect.ownKeys(inner);
        },
      });
      views.set(target, proxy);
    }
    return proxy;
  };
  const errors: string[] = [];
  try {
    schemaClass.prototype.validate.call(object !== null && typeof object === 'object' ? view(object) : object);
  } catch (error) {
    errors.push((error as Error).message);
  }
  const unknownFields: string[] = [];
  const walk = (value: unknown, path: string): void => {
    if (value === null || typeof value !== 'object') return;
    if (Array.isArray(value)) { value.forEach((item, index) => walk(item, `${path}/${index}`)); return; }
    const read = propertiesRead.get(value);
    const closed = !enumerated.has(value) && read !== undefined && read.size > 0;
    for (const [key, child] of Object.entries(value)) {
      if (closed && !read.has(key)) unknownFields.push(`${path}/${key}`);
      else walk(child, `${path}/${key}`);
    }
  };
  walk(object, '');
  return { errors, unknownFields };
}
