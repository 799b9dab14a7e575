mod recorded;
mod streams_anthropic;
mod streams_bedrock;
mod streams_gemini;
mod streams_openai_chat;
mod streams_openai_responses;
mod support;
mod transport;
