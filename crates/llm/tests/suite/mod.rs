mod recorded;
mod streams_openai_chat;
mod support;
mod transport;
