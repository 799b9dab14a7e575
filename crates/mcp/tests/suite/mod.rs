mod control;
mod everything;
mod mock_oauth;
mod oauth;
mod scripted;
mod support;
