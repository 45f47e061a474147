import type { Express } from 'express';
import type { InferenceRouteKit } from '../http-app.ts';

/** POST /v1/embeddings: mounted here (issue 16 builds it); until then the route answers the 404 of any unknown route. */
export function mountEmbeddingsRoute(_app: Express, _kit: InferenceRouteKit): void {
  // Intentionally empty until this surface lands.
}
