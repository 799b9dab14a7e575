mod config_merge;
mod ingest;
mod resolve;
mod sign_in;
