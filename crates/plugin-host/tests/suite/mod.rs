mod copilot;
mod external;
mod host;
mod loader;
mod pkce;
mod seams;
mod support;
