mod snapshots;
