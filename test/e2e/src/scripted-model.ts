// The scripted Anthropic model lives in the test kit (the benchmarks drive Claude Code with it
// too); the end-to-end tests import it from here as before.
export type {
  MessagesRequest,
  ScriptedModel,
  ScriptedReply,
} from '@ctxbus/test-kit/scripted-model';
export { requestText, startScriptedModel, toolResults } from '@ctxbus/test-kit/scripted-model';
