mod recorded;
mod streams_anthropic;
mod streams_bedrock;
mod streams_gemini;
mod streams_openai_chat;
mod support;
mod transport;
