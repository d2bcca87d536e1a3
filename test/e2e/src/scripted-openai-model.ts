// The scripted Chat Completions model lives in the test kit (the benchmarks drive OpenClaw with
// it too); the end-to-end tests import it from here as before.
export type {
  ChatCompletionsRequest,
  ChatMessage,
  ScriptedOpenAiModel,
  ScriptedOpenAiReply,
} from '@ctxbus/test-kit/scripted-openai-model';
export {
  contentText,
  requestText,
  roleText,
  startScriptedOpenAiModel,
  toolNames,
  toolResults,
} from '@ctxbus/test-kit/scripted-openai-model';
