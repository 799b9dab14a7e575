//! Sessions: create/adopt, listing pages, filters, children, cascade, fork, revert, archive.

use opencode_session_store::MessageInfo;
use opencode_session_store::NewSession;
use opencode_session_store::Revert;
use opencode_session_store::SessionQuery;
use opencode_session_store::Todo;
use pretty_assertions::assert_eq;

use super::support::PROJECT;
use super::support::session;
use super::support::store;
use super::support::text;
use super::support::texts;
use super::support::turn;

#[test]
fn creating_with_an_existing_id_adopts_the_session() {
    let (_dir, store) = store();
    let first = session(&store);
    let again = store
        .write(|tx| {
            tx.create_session(NewSession { id: Some(first.id.clone()), ..NewSession::new(PROJECT, "/elsewhere") })
        })
        .unwrap();
    assert_eq!(again, first);
    assert!(first.title.starts_with("New session - "), "{}", first.title);
    let page = store.read(|r| r.list_sessions(&SessionQuery::default())).unwrap();
    assert_eq!(page.sessions.len(), 1);
}

#[test]
fn a_session_knows_its_directory_relative_to_the_worktree() {
    let (_dir, store) = store();
    let path = |directory: &str| store.write(|tx| tx.create_session(NewSession::new(PROJECT, directory))).unwrap().path;
    assert_eq!(path("/work/project").as_deref(), Some(""));
    assert_eq!(path("/work/project/crates/core").as_deref(), Some("crates/core"));
    assert_eq!(path("/work/projectile"), None);
}

#[test]
fn a_session_needs_an_existing_project() {
    let (_dir, store) = store();
    let err = store.write(|tx| tx.create_session(NewSession::new("prj_missing", "/x"))).unwrap_err();
    assert_eq!(err.to_string(), "project prj_missing not found");
}

#[test]
fn listing_walks_every_session_once_across_page_boundaries() {
    let (_dir, store) = store();
    assert_eq!(store.read(|r| r.list_sessions(&SessionQuery::default())).unwrap().next, None);
    // 25 sessions created in one transaction share one timestamp: the id breaks ties.
    let mut created: Vec<String> = store
        .write(|tx| {
            (0..25).map(|_| tx.create_session(NewSession::new(PROJECT, "/work/project")).map(|s| s.id)).collect()
        })
        .unwrap();
    created.sort();
    for limit in [1, 10, 24, 25, 26] {
        let mut seen = Vec::new();
        let mut cursor = None;
        let mut pages = 0;
        loop {
            let query = SessionQuery { limit, cursor: cursor.clone(), ..SessionQuery::default() };
            let page = store.read(|r| r.list_sessions(&query)).unwrap();
            assert!(page.sessions.len() <= limit);
            seen.extend(page.sessions.into_iter().map(|s| s.id));
            pages += 1;
            match page.next {
                Some(next) => cursor = Some(next),
                None => break,
            }
        }
        assert_eq!(seen, created, "limit {limit}");
        assert_eq!(pages, 25usize.div_ceil(limit), "limit {limit}");
    }
}

#[test]
fn listing_puts_recent_activity_first_and_filters() {
    let (_dir, store) = store();
    let old = session(&store);
    let other_dir = store.write(|tx| tx.create_session(NewSession::new(PROJECT, "/other"))).unwrap();
    let renamed = store.write(|tx| tx.update_session(&old.id, |s| s.title = "Fix 100% of the bugs".into())).unwrap();
    std::thread::sleep(std::time::Duration::from_millis(2));
    store.write(|tx| tx.touch_session(&renamed.id)).unwrap();

    let all = store.read(|r| r.list_sessions(&SessionQuery::default())).unwrap();
    assert_eq!(all.sessions.iter().map(|s| s.id.as_str()).collect::<Vec<_>>(), vec![old.id.as_str(), &other_dir.id]);

    let by_dir = SessionQuery { directory: Some("/other".into()), ..SessionQuery::default() };
    assert_eq!(store.read(|r| r.list_sessions(&by_dir)).unwrap().sessions, vec![other_dir.clone()]);

    let search = SessionQuery { search: Some("100%".into()), ..SessionQuery::default() };
    let found = store.read(|r| r.list_sessions(&search)).unwrap().sessions;
    assert_eq!(found.iter().map(|s| s.title.as_str()).collect::<Vec<_>>(), vec!["Fix 100% of the bugs"]);
    let no_wildcard = SessionQuery { search: Some("%".into()), ..SessionQuery::default() };
    assert_eq!(store.read(|r| r.list_sessions(&no_wildcard)).unwrap().sessions.len(), 1);

    store.write(|tx| tx.set_archived(&other_dir.id, true)).unwrap();
    assert_eq!(store.read(|r| r.list_sessions(&SessionQuery::default())).unwrap().sessions.len(), 1);
    let with_archived = SessionQuery { include_archived: true, ..SessionQuery::default() };
    let listed = store.read(|r| r.list_sessions(&with_archived)).unwrap().sessions;
    assert!(listed.iter().any(|s| s.id == other_dir.id && s.time.archived.is_some()));
}

#[test]
fn removing_a_session_cascades_to_children_and_everything_they_own() {
    let (dir, store) = store();
    let parent = session(&store);
    let child = store
        .write(|tx| {
            tx.create_session(NewSession { parent_id: Some(parent.id.clone()), ..NewSession::new(PROJECT, "/w") })
        })
        .unwrap();
    let grandchild = store
        .write(|tx| {
            tx.create_session(NewSession { parent_id: Some(child.id.clone()), ..NewSession::new(PROJECT, "/w") })
        })
        .unwrap();
    let bystander = session(&store);
    for id in [&parent.id, &child.id, &grandchild.id, &bystander.id] {
        turn(&store, id, "x");
        store
            .write(|tx| {
                tx.admit_input(
                    id,
                    None,
                    serde_json::json!({"text": "later"}),
                    opencode_session_store::Delivery::Queue,
                )?;
                tx.set_todos(id, &[Todo { content: "t".into(), status: "pending".into(), priority: "high".into() }])
            })
            .unwrap();
    }
    let children = store.read(|r| r.children(&parent.id)).unwrap();
    assert_eq!(children.iter().map(|c| c.id.as_str()).collect::<Vec<_>>(), vec![child.id.as_str()]);

    let removed = store.write(|tx| tx.remove_session(&parent.id)).unwrap();
    assert_eq!(removed, vec![parent.id, child.id, grandchild.id]);

    let conn = rusqlite::Connection::open(dir.db()).unwrap();
    for table in ["session", "message", "part", "event", "session_input", "todo"] {
        let orphans: i64 = conn
            .query_row(&format!("SELECT COUNT(*) FROM {table} WHERE {} <> ?1", key(table)), [&bystander.id], |r| {
                r.get(0)
            })
            .unwrap();
        assert_eq!(orphans, 0, "rows left in {table}");
    }
    assert!(store.read(|r| r.session(&bystander.id)).unwrap().is_some());
    assert_eq!(store.read(|r| r.history(&bystander.id, None, 10)).unwrap().messages.len(), 2);
}

fn key(table: &str) -> &'static str {
    if table == "session" { "id" } else { "session_id" }
}

#[test]
fn fork_copies_history_before_a_message_with_new_ids() {
    let (_dir, store) = store();
    let source = session(&store);
    let (q1, a1) = turn(&store, &source.id, "one");
    let (q2, _) = turn(&store, &source.id, "two");

    let fork = store.write(|tx| tx.fork_session(&source.id, Some(q2.id()))).unwrap();
    assert_eq!(fork.title, format!("{} (fork #1)", source.title));
    let copied = store.read(|r| r.history(&fork.id, None, 10)).unwrap().messages;
    assert_eq!(texts(&copied), vec!["question one", "answer one"]);
    let (new_q, new_a) = (&copied[0].info, &copied[1].info);
    assert_ne!(new_q.id(), q1.id());
    assert_ne!(new_a.id(), a1.id());
    let MessageInfo::Assistant(answer) = new_a else { panic!("assistant expected") };
    assert_eq!(answer.parent_id, new_q.id());
    assert!(copied.iter().flat_map(|m| &m.parts).all(|p| p.session_id == fork.id));

    let whole = store.write(|tx| tx.fork_session(&source.id, None)).unwrap();
    assert_eq!(store.read(|r| r.history(&whole.id, None, 10)).unwrap().messages.len(), 4);
    let source_history = store.read(|r| r.history(&source.id, None, 10)).unwrap();
    assert_eq!(texts(&source_history.messages), vec!["question one", "answer one", "question two", "answer two"]);
}

#[test]
fn a_staged_revert_hides_history_until_undone_or_committed() {
    let (_dir, store) = store();
    let s = session(&store);
    turn(&store, &s.id, "one");
    let (q2, _) = turn(&store, &s.id, "two");
    let revert = Revert { message_id: q2.id().into(), part_id: None, snapshot: None, diff: None };
    store.write(|tx| tx.set_revert(&s.id, revert)).unwrap();
    assert_eq!(
        texts(&store.read(|r| r.history(&s.id, None, 10)).unwrap().messages),
        vec!["question one", "answer one"]
    );
    assert_eq!(store.read(|r| r.messages(&s.id, None, 10)).unwrap().messages.len(), 4);

    store.write(|tx| tx.clear_revert(&s.id)).unwrap();
    assert_eq!(store.read(|r| r.history(&s.id, None, 10)).unwrap().messages.len(), 4);

    let revert = Revert { message_id: q2.id().into(), part_id: None, snapshot: None, diff: None };
    let after = store.write(|tx| tx.set_revert(&s.id, revert).and_then(|_| tx.commit_revert(&s.id))).unwrap();
    assert_eq!(after.revert, None);
    assert_eq!(
        texts(&store.read(|r| r.messages(&s.id, None, 10)).unwrap().messages),
        vec!["question one", "answer one"]
    );
}

#[test]
fn a_revert_at_a_part_keeps_the_parts_before_it() {
    let (_dir, store) = store();
    let s = session(&store);
    let (_, answer) = turn(&store, &s.id, "one");
    let second = text(&answer, "second thought");
    store.write(|tx| tx.upsert_part(&second)).unwrap();
    let revert = Revert { message_id: answer.id().into(), part_id: Some(second.id), snapshot: None, diff: None };
    store.write(|tx| tx.set_revert(&s.id, revert)).unwrap();
    assert_eq!(
        texts(&store.read(|r| r.history(&s.id, None, 10)).unwrap().messages),
        vec!["question one", "answer one"]
    );
}
