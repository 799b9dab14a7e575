mod copilot;
mod external;
mod host;
mod loader;
mod pkce;
mod refresh;
mod seams;
mod support;
