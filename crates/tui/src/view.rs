//! Drawing a frame from the state: the transcript, a permission dialog, the prompt box, the status
//! line, and the overlays. Any size works, down to a few cells (nothing is drawn that does not fit).

use ratatui::Frame;
use ratatui::layout::Constraint;
use ratatui::layout::Layout;
use ratatui::layout::Position;
use ratatui::layout::Rect;
use ratatui::style::Modifier;
use ratatui::style::Style;
use ratatui::text::Line;
use ratatui::text::Span;
use ratatui::widgets::Block;
use ratatui::widgets::Borders;
use ratatui::widgets::Clear;
use ratatui::widgets::Paragraph;

use crate::app::App;
use crate::app::Connection;
use crate::app::Overlay;
use crate::wrap::fit;

/// Rows of the prompt box's text at most (it grows with the prompt up to this).
const MAX_INPUT_ROWS: u16 = 8;

/// Columns of the sidebar.
const SIDEBAR_WIDTH: u16 = 42;

pub fn draw(frame: &mut Frame, app: &mut App) {
    let area = frame.area();
    app.last_width = area.width;
    let input_rows = (app.input.text().lines().count().max(1) as u16 + u16::from(app.input.text().ends_with('\n')))
        .min(MAX_INPUT_ROWS);
    let dialog_rows = if app.permission().is_some() { 5 } else { 0 };
    let [body, dialog, prompt, status] = Layout::vertical([
        Constraint::Min(0),
        Constraint::Length(dialog_rows),
        Constraint::Length(input_rows + 2),
        Constraint::Length(1),
    ])
    .areas(area);
    let body = if app.sidebar_shown(area.width) && body.width > SIDEBAR_WIDTH + 20 {
        let [body, side] = Layout::horizontal([Constraint::Min(0), Constraint::Length(SIDEBAR_WIDTH)]).areas(body);
        sidebar(frame, app, side);
        body
    } else {
        body
    };
    transcript(frame, app, body);
    if dialog_rows > 0 {
        permission(frame, app, dialog);
    }
    input(frame, app, prompt);
    completion(frame, app, body);
    slash_menu(frame, app, body);
    status_line(frame, app, status);
    match &app.overlay {
        Overlay::Palette { query, selected } => palette(frame, app, area, query, *selected),
        Overlay::Sessions { selected } => sessions(frame, app, area, *selected),
        Overlay::Models { selected } => models(frame, app, area, *selected),
        Overlay::Agents { selected } => agents(frame, app, area, *selected),
        Overlay::Themes { selected } => {
            let items = app.theme_names.iter().map(|name| (name.clone(), Style::default())).collect();
            list(frame, centered(area, 50, 14), " Themes · ↑/↓ enter esc ", items, *selected, "", &app.theme);
        }
        Overlay::Connect { query, selected } => {
            let items = app
                .connectable(query)
                .into_iter()
                .map(|p| {
                    let mark = if p.connected { "  (connected)" } else { "" };
                    (format!("{} · {}{mark}", p.name, p.id), Style::default())
                })
                .collect();
            let title = format!(" Connect a provider: {query}▏ · ↑/↓ enter esc ");
            list(frame, centered(area, 60, 16), &title, items, *selected, "no provider matches", &app.theme);
        }
        Overlay::ApiKey { name, key, .. } => {
            let masked = "•".repeat(key.chars().count());
            let items = vec![(format!("{masked}▏"), Style::default())];
            let title = format!(" API key for {name} · enter stores it, esc cancels ");
            list(frame, centered(area, 60, 3), &title, items, 0, "", &app.theme);
        }
        Overlay::Help => help(frame, app, area),
        Overlay::None => {}
    }
}

fn transcript(frame: &mut Frame, app: &mut App, area: Rect) {
    if area.height == 0 || area.width < 2 {
        return;
    }
    let width = area.width - 1;
    let height = usize::from(area.height);
    let (mut shown, short) = window(app, width, height, app.scroll);
    if short > 0 && app.scroll > 0 {
        // Scrolled past the top: stop at the first line.
        app.scroll = app.scroll.saturating_sub(short);
        shown = window(app, width, height, app.scroll).0;
    }
    if shown.is_empty() {
        shown.push(Line::from(Span::styled("Ask anything. /help for keys and commands.", app.theme.muted())));
    }
    let inner = Rect { x: area.x + 1, width, ..area };
    frame.render_widget(Paragraph::new(shown), inner);
}

/// The `height` rows that end `scroll` rows above the bottom, and how many rows short of `height`
/// the transcript is there. Walks from the newest message back and clones only the rows shown, so a
/// frame costs the visible rows plus the (cached) heights of the messages below them.
fn window(app: &mut App, width: u16, height: usize, scroll: usize) -> (Vec<Line<'static>>, usize) {
    let mut skip = scroll;
    let mut need = height;
    let mut rows: Vec<Line<'static>> = Vec::with_capacity(height);
    let reverted = app.reverted();
    if reverted > 0 {
        let noun = if reverted == 1 { "message" } else { "messages" };
        let notice = format!("{reverted} {noun} reverted · ctrl+x r or /redo to restore");
        take(&[Line::from(Span::styled(notice, app.theme.muted()))], &mut skip, &mut need, &mut rows);
    }
    let visible_count = app.visible().len();
    let App { messages, transcript, theme, options, revisions, .. } = app;
    for message in messages[..visible_count].iter().rev() {
        if need == 0 {
            break;
        }
        let revision = revisions.get(&message.info.id).copied().unwrap_or(0);
        take(transcript.lines(message, revision, width, *options, theme), &mut skip, &mut need, &mut rows);
    }
    (rows, need + skip)
}

/// Puts the part of `lines` that falls in the window in front of `rows`.
fn take(lines: &[Line<'static>], skip: &mut usize, need: &mut usize, rows: &mut Vec<Line<'static>>) {
    if *skip >= lines.len() {
        *skip -= lines.len();
        return;
    }
    let end = lines.len() - *skip;
    *skip = 0;
    let start = end.saturating_sub(*need);
    *need -= end - start;
    rows.splice(0..0, lines[start..end].iter().cloned());
}

fn permission(frame: &mut Frame, app: &App, area: Rect) {
    let Some(request) = app.permission() else { return };
    let theme = &app.theme;
    let detail = request
        .metadata
        .get("command")
        .and_then(|c| c.as_str())
        .map(str::to_owned)
        .unwrap_or_else(|| request.patterns.join(", "));
    let mut choices = Vec::new();
    let always = if request.always.is_empty() { String::new() } else { format!(" ({})", request.always.join(", ")) };
    for (i, label) in
        ["Allow once".to_owned(), format!("Allow always{always}"), "Reject".to_owned()].into_iter().enumerate()
    {
        let style = if i == app.permission_choice {
            Style::default().add_modifier(Modifier::REVERSED | Modifier::BOLD)
        } else {
            Style::default()
        };
        choices.push(Span::styled(format!(" {label} "), style));
        choices.push(Span::raw("  "));
    }
    let lines = vec![
        Line::from(vec![Span::styled("△ Permission required ", theme.warning().add_modifier(Modifier::BOLD))]),
        Line::from(vec![Span::styled(format!("{}: ", request.permission), theme.bold()), Span::raw(detail)]),
        Line::from(choices),
        Line::from(Span::styled("←/→ or 1-3 choose · enter confirm · esc rejects with what you typed", theme.muted())),
    ];
    let block = Block::default().borders(Borders::TOP).border_style(theme.warning());
    frame.render_widget(Paragraph::new(lines).block(block), area);
}

fn input(frame: &mut Frame, app: &App, area: Rect) {
    let theme = &app.theme;
    let color = theme.agent(app.agent, app.agents.get(app.agent).and_then(|a| a.color.as_deref()));
    let block = Block::default().borders(Borders::ALL).border_style(Style::default().fg(color)).title(Span::styled(
        format!(" {} ", app.agent_name()),
        Style::default().fg(color).add_modifier(Modifier::BOLD),
    ));
    let inner = block.inner(area);
    let (row, column) = app.input.cursor_position();
    let scroll = (row as u16).saturating_sub(inner.height.saturating_sub(1));
    let text: Vec<Line> = app.input.text().split('\n').map(|l| Line::from(l.to_owned())).collect();
    frame.render_widget(Paragraph::new(text).block(block).scroll((scroll, 0)), area);
    if app.overlay == Overlay::None && inner.width > 0 && inner.height > 0 {
        let x = inner.x + (column as u16).min(inner.width - 1);
        let y = inner.y + (row as u16 - scroll).min(inner.height - 1);
        frame.set_cursor_position(Position { x, y });
    }
}

fn status_line(frame: &mut Frame, app: &App, area: Rect) {
    let theme = &app.theme;
    let title = app.session.as_ref().map_or("new session", |s| s.title.as_str());
    let mut after_title = Vec::new();
    if app.session.as_ref().is_some_and(|s| s.parent_id.is_some()) {
        after_title.push(Span::styled("  subagent · ctrl+x ← back", theme.muted()));
    }
    if app.busy {
        after_title.push(Span::styled("  working · esc to interrupt", theme.accent()));
    }
    // A notice (an error, a hint) takes the line: it matters more than the figures.
    if let Some(notice) = &app.notice {
        after_title.insert(0, Span::styled(title.to_owned(), theme.bold()));
        after_title.push(Span::styled(format!("  {notice}"), theme.warning()));
        frame.render_widget(Paragraph::new(Line::from(after_title)), area);
        return;
    }
    let (used, limit, cost) = app.context();
    let mut right = Vec::new();
    if let Some((_, model)) = app.model() {
        match &app.variant {
            Some(variant) => right.push(format!("{model} {variant}")),
            None => right.push(model),
        }
    }
    if used > 0 {
        let percent = limit.filter(|l| *l > 0).map(|l| format!(" ({}%)", used * 100 / l)).unwrap_or_default();
        right.push(format!("{}{percent}", tokens(used)));
    }
    if cost > 0.0 {
        right.push(format!("${cost:.2}"));
    }
    let connection = match &app.connection {
        Connection::Connected => Span::styled("●", theme.success()),
        Connection::Reconnecting(_) => Span::styled("○ reconnecting", theme.error()),
    };
    let right_text = right.join(" · ");
    let right_width = right_text.chars().count() as u16 + 3 + connection.width() as u16;
    let [left_area, right_area] =
        Layout::horizontal([Constraint::Min(0), Constraint::Length(right_width.min(area.width))]).areas(area);
    // The title gives way (cut with `…`) to what follows it and to the figures.
    let room = usize::from(left_area.width).saturating_sub(after_title.iter().map(Span::width).sum());
    after_title.insert(0, Span::styled(fit(title, room), theme.bold()));
    frame.render_widget(Paragraph::new(Line::from(after_title)), left_area);
    let right_line =
        Line::from(vec![Span::raw(" "), Span::styled(right_text, theme.muted()), Span::raw("  "), connection]);
    frame.render_widget(Paragraph::new(right_line), right_area);
}

fn tokens(n: u64) -> String {
    match n {
        0..1_000 => n.to_string(),
        1_000..1_000_000 => format!("{:.1}K", n as f64 / 1_000.0),
        _ => format!("{:.1}M", n as f64 / 1_000_000.0),
    }
}

fn sessions(frame: &mut Frame, app: &App, area: Rect, selected: usize) {
    let items = app
        .sessions
        .iter()
        .map(|session| {
            let current = app.session.as_ref().is_some_and(|s| s.id == session.id);
            (session.title.clone(), if current { app.theme.accent() } else { Style::default() })
        })
        .collect();
    list(frame, centered(area, 70, 20), " Sessions · ↑/↓ enter esc ", items, selected, "no sessions yet", &app.theme);
}

fn models(frame: &mut Frame, app: &App, area: Rect, selected: usize) {
    let current = app.model();
    let items = app
        .models()
        .into_iter()
        .map(|model| {
            let style = if current.as_ref() == Some(&model) { app.theme.accent() } else { Style::default() };
            (format!("{}/{}", model.0, model.1), style)
        })
        .collect();
    list(
        frame,
        centered(area, 70, 20),
        " Models · ↑/↓ enter esc ",
        items,
        selected,
        "no provider can answer",
        &app.theme,
    );
}

fn palette(frame: &mut Frame, app: &App, area: Rect, query: &str, selected: usize) {
    let items = app
        .palette(query)
        .into_iter()
        .map(|(name, description)| (format!("/{name:<14} {description}"), Style::default()))
        .collect();
    let title = format!(" Commands: {query}▏ · ↑/↓ enter esc ");
    list(frame, centered(area, 70, 16), &title, items, selected, "no command matches", &app.theme);
}

fn agents(frame: &mut Frame, app: &App, area: Rect, selected: usize) {
    let items = app
        .agents
        .iter()
        .enumerate()
        .map(|(i, agent)| {
            let color = app.theme.agent(i, agent.color.as_deref());
            let text = match &agent.description {
                Some(description) => format!("{}  {description}", agent.name),
                None => agent.name.clone(),
            };
            (text, Style::default().fg(color))
        })
        .collect();
    list(frame, centered(area, 70, 12), " Agents · ↑/↓ enter esc ", items, selected, "no agents", &app.theme);
}

/// The session at a glance: title, context used and cost, the files it changed, its todo list.
fn sidebar(frame: &mut Frame, app: &App, area: Rect) {
    let theme = &app.theme;
    let title = app.session.as_ref().map_or("New session", |s| s.title.as_str());
    let mut lines = vec![Line::from(Span::styled(title.to_owned(), theme.bold())), Line::default()];
    lines.push(Line::from(Span::styled("Context", theme.bold())));
    let (used, limit, cost) = app.context();
    lines.push(Line::from(format!("{} tokens", tokens(used))));
    if let Some(limit) = limit.filter(|limit| *limit > 0) {
        lines.push(Line::from(format!("{}% used", used * 100 / limit)));
    }
    lines.push(Line::from(format!("${cost:.2} spent")));
    if !app.diff.is_empty() {
        lines.push(Line::default());
        lines.push(Line::from(Span::styled("Modified files", theme.bold())));
        for file in &app.diff {
            lines.push(Line::from(vec![
                Span::raw(format!("{} ", file.file)),
                Span::styled(format!("+{}", file.additions), theme.success()),
                Span::raw(" "),
                Span::styled(format!("-{}", file.deletions), theme.error()),
            ]));
        }
    }
    if !app.todos.is_empty() {
        lines.push(Line::default());
        lines.push(Line::from(Span::styled("Todo", theme.bold())));
        for todo in &app.todos {
            let done = todo["status"] == "completed";
            let mark = if done {
                "[x]"
            } else if todo["status"] == "in_progress" {
                "[•]"
            } else {
                "[ ]"
            };
            let style = if done { theme.muted() } else { Style::default() };
            lines.push(Line::from(Span::styled(format!("{mark} {}", todo["content"].as_str().unwrap_or("")), style)));
        }
    }
    let block = Block::default().borders(Borders::LEFT).border_style(theme.muted());
    frame.render_widget(Paragraph::new(lines).block(block).wrap(ratatui::widgets::Wrap { trim: false }), area);
}

/// The `@` file popup, at the bottom of the transcript area just above the prompt box.
fn completion(frame: &mut Frame, app: &App, body: Rect) {
    let Some(completion) = &app.completion else { return };
    let height = (completion.files.len() as u16 + 2).min(body.height);
    let popup = Rect { y: body.y + body.height - height, height, width: body.width.min(60), ..body };
    let items = completion.files.iter().map(|f| (f.clone(), Style::default())).collect();
    list(frame, popup, " @ files · tab/enter esc ", items, completion.selected, "", &app.theme);
}

/// The `/` command menu, above the prompt box.
fn slash_menu(frame: &mut Frame, app: &App, body: Rect) {
    let menu = app.slash_menu();
    if menu.is_empty() {
        return;
    }
    let height = (menu.len() as u16 + 2).min(body.height).min(12);
    let popup = Rect { y: body.y + body.height - height, height, width: body.width.min(70), ..body };
    let items = menu.into_iter().map(|(name, description)| (format!("/{name:<14} {description}"), Style::default()));
    let selected = app.slash_selected;
    list(frame, popup, " commands · ↑/↓ tab enter esc ", items.collect(), selected, "", &app.theme);
}

/// A bordered list with the selected row reversed, scrolled to keep it in view.
fn list(
    frame: &mut Frame,
    popup: Rect,
    title: &str,
    items: Vec<(String, Style)>,
    selected: usize,
    empty: &str,
    theme: &crate::theme::Theme,
) {
    let rows = usize::from(popup.height.saturating_sub(2));
    let first = selected.saturating_sub(rows.saturating_sub(1));
    let mut lines: Vec<Line> = items
        .into_iter()
        .enumerate()
        .skip(first)
        .take(rows)
        .map(|(i, (text, style))| {
            let style = if i == selected { style.add_modifier(Modifier::REVERSED) } else { style };
            // A row wider than the list is cut with `…`, not mid-word at the border.
            let inner = usize::from(popup.width.saturating_sub(4));
            Line::from(Span::styled(format!(" {} ", fit(&text, inner)), style))
        })
        .collect();
    if lines.is_empty() && !empty.is_empty() {
        lines.push(Line::from(Span::styled(empty.to_owned(), theme.muted())));
    }
    let block = Block::default().borders(Borders::ALL).title(title.to_owned());
    frame.render_widget(Clear, popup);
    frame.render_widget(Paragraph::new(lines).block(block), popup);
}

fn help(frame: &mut Frame, app: &App, area: Rect) {
    use crate::keys::Action;
    // Keys as bound now (tui.json may have changed them), with the slash command beside.
    let bound = |action: Action, command: &str| {
        let keys = app.keymap.describe(action);
        match (keys.is_empty(), command.is_empty()) {
            (true, _) => command.to_owned(),
            (false, true) => keys,
            (false, false) => format!("{keys}  {command}"),
        }
    };
    let rows = [
        ("enter".to_owned(), "send the prompt (alt+enter: a new line)"),
        (bound(Action::AgentCycle, ""), "next agent"),
        (bound(Action::SessionInterrupt, ""), "interrupt the running turn"),
        (bound(Action::MessagesPageUp, ""), "scroll up (the wheel too)"),
        (bound(Action::CommandList, ""), "all commands, searchable"),
        (bound(Action::SessionNew, "/new"), "new session"),
        (bound(Action::SessionList, "/sessions"), "switch session"),
        (bound(Action::ModelList, "/models"), "choose the model"),
        (bound(Action::VariantCycle, ""), "next variant of the model"),
        (bound(Action::AgentList, "/agents"), "choose the agent"),
        (bound(Action::SidebarToggle, "/sidebar"), "show or hide the sidebar"),
        (bound(Action::ThemeList, "/themes"), "choose the colours"),
        (bound(Action::MessagesCopy, "/copy"), "copy the last answer (OSC 52)"),
        (bound(Action::EditorOpen, "/editor"), "write the prompt in $EDITOR"),
        (bound(Action::SessionExport, "/export"), "save the transcript as markdown"),
        ("@path".to_owned(), "attach a file (tab completes)"),
        (bound(Action::SessionChildCycle, ""), "into a subagent's session"),
        (bound(Action::SessionParent, ""), "back to its parent"),
        (bound(Action::MessagesUndo, "/undo"), "undo the last prompt"),
        (bound(Action::MessagesRedo, "/redo"), "restore what undo removed"),
        (bound(Action::SessionCompact, "/compact"), "compact the history"),
        ("/thinking".to_owned(), "show or hide reasoning"),
        ("!command".to_owned(), "run a shell command in the session"),
        (bound(Action::AppExit, "/exit"), "quit"),
    ];
    let column = rows.iter().map(|(keys, _)| keys.chars().count()).max().unwrap_or(0) + 2;
    let described = rows.iter().map(|(_, what)| what.chars().count()).max().unwrap_or(0);
    let popup = centered(area, (column + described + 3) as u16, rows.len() as u16 + 2);
    let lines: Vec<Line> = rows
        .iter()
        .map(|(keys, what)| {
            Line::from(vec![Span::styled(format!(" {keys:<column$}"), app.theme.accent()), Span::raw(*what)])
        })
        .collect();
    let block = Block::default().borders(Borders::ALL).title(" Help · any key closes ");
    frame.render_widget(Clear, popup);
    frame.render_widget(Paragraph::new(lines).block(block), popup);
}

/// A rectangle of at most `width` x `height` centred in `area`.
fn centered(area: Rect, width: u16, height: u16) -> Rect {
    let (w, h) = (width.min(area.width), height.min(area.height));
    Rect { x: area.x + (area.width - w) / 2, y: area.y + (area.height - h) / 2, width: w, height: h }
}
