mod credentials;
mod discovery;
