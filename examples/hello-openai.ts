/**
 * The README's walkthrough with the official `openai` client: one completion through the gateway.
 * Run from the repository root: GATEWAY_API_KEY=gwsk_... npx -y pnpm@12 exec node examples/hello-openai.ts
 */
import OpenAI from 'openai';

const apiKey = process.env.GATEWAY_API_KEY;
if (!apiKey) {
  process.stderr.write('Set GATEWAY_API_KEY to the project key the admin API returned (gwsk_...).\n');
  process.exit(2);
}
const client = new OpenAI({ apiKey, baseURL: process.env.GATEWAY_BASE_URL ?? 'http://127.0.0.1:8080/v1' });

const models = await client.models.list();
console.log('models:', models.data.map((model) => model.id).join(', '));

const completion = await client.chat.completions.create({
  model: process.env.GATEWAY_MODEL ?? 'demo',
  messages: [{ role: 'user', content: 'Hello from the openai client!' }],
});
console.log('model:', completion.model);
console.log('reply:', completion.choices[0]?.message.content);
console.log('usage:', completion.usage);
