mod config_merge;
mod ingest;
mod resolve;
