// What the LangGraph scripts share: a run traced by OpenInference's
// LangChain instrumentation into an OTLP/JSON lines file, and the chat model
// pointed at the scripted server.
import { NodeTracerProvider, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-node";
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-http";
import { resourceFromAttributes } from "@opentelemetry/resources";
import { context } from "@opentelemetry/api";
import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks";
import { LangChainInstrumentation } from "@arizeai/openinference-instrumentation-langchain";
import * as CallbackManagerModule from "@langchain/core/callbacks/manager";
import { ChatOpenAI } from "@langchain/openai";
import { startReceiver } from "./server.mjs";

// spans started inside an app's own span are its children, as after register()
context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());

// traced runs fn(provider) with the LangChain instrumentation exporting every
// span to a receiver that writes them to file; service names the resource.
export async function traced(file, service, fn) {
  const receiver = await startReceiver(file);
  const provider = new NodeTracerProvider({
    resource: resourceFromAttributes({ "service.name": service }),
    spanProcessors: [new SimpleSpanProcessor(new OTLPTraceExporter({ url: receiver.url }))],
  });
  const inst = new LangChainInstrumentation({ tracerProvider: provider });
  inst.manuallyInstrument(CallbackManagerModule);
  try {
    await fn(provider);
  } finally {
    await provider.forceFlush();
    await provider.shutdown();
    inst.disable();
    receiver.srv.close();
  }
  console.log("wrote", file);
}

// chatModel is ChatOpenAI talking to the scripted server at url.
export const chatModel = (url) => new ChatOpenAI({ model: "scripted-4o", apiKey: "sk-scripted", configuration: { baseURL: url }, temperature: 0 });
