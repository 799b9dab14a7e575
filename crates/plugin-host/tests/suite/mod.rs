mod copilot;
mod external;
mod host;
mod loader;
mod support;
