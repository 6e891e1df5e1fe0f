#include "chatcontroller.h"

#include <QClipboard>
#include <QFileInfo>
#include <QGuiApplication>
#include <QRegularExpression>
#include <QStandardPaths>
#include <algorithm>
#include <utility>

#include "reasoning.h"

namespace {
const QStringList kNumberSettings{"temperature", "topK",          "topP",
                                  "minP",        "repeatPenalty", "maxTokens"};
const QStringList kPolicies{"dropOldest", "rollingWindow", "stop"};
}  // namespace

ChatController::ChatController(ConversationStore* store, InferenceController* inference,
                               Settings* settings, QObject* parent, MessageModel::Clock clock)
    : QObject(parent),
      m_store(store),
      m_inference(inference),
      m_settings(settings),
      m_messages(nullptr, std::move(clock)),
      m_conversations(store) {
    connect(m_inference, &InferenceController::generatingChanged, this,
            &ChatController::generatingChanged);
    connect(m_inference, &InferenceController::textReady, this, &ChatController::onTextReady);
    connect(m_inference, &InferenceController::generationFinished, this,
            &ChatController::onFinished);
    connect(m_inference, &InferenceController::generationFailed, this, &ChatController::onFailed);
    connect(m_inference, &InferenceController::modelChanged, this, &ChatController::onModelChanged);
    connect(m_inference, &InferenceController::modelChanged, this,
            &ChatController::thinkingSwitchChanged);
    connect(m_inference, &InferenceController::loadFailed, this,
            [this](const QString& message, const QString& detail) {
                setError(tr("Could not load the model: %1").arg(message),
                         detail == message ? QString() : detail);
            });
    connect(m_inference, &InferenceController::modelChanged, this, &ChatController::countTokens);
    connect(m_inference, &InferenceController::tokensCounted, this, [this](int tokens) {
        m_contextTokens = tokens;
        emit contextTokensChanged();
    });
    m_countTimer.setSingleShot(true);
    m_countTimer.setInterval(250);
    connect(&m_countTimer, &QTimer::timeout, this, &ChatController::countTokens);
    m_saveTimer.setInterval(kSaveIntervalMs);
    connect(&m_saveTimer, &QTimer::timeout, this, &ChatController::savePartial);
    refreshList();
    // The app opens where it was left: the last conversation, if it still exists.
    if (const qint64 last = m_settings->lastConversationId();
        last != 0 && m_store->conversation(last).id == last) {
        selectConversation(last);
    }
}

ChatController::~ChatController() {
    saveInterrupted();
}

void ChatController::refreshList() {
    m_conversations.refresh(m_search);
}

void ChatController::setSearchText(const QString& text) {
    if (text == m_search) return;
    m_search = text;
    refreshList();
    emit searchTextChanged();
}

void ChatController::newConversation() {
    // The conversation is created in the store with its first message.
    m_conversationId = 0;
    m_title.clear();
    m_messages.reset({});
    m_thinking = true;
    m_convSettings.clear();  // a new conversation takes the defaults
    emit currentConversationChanged();
    emit thinkingChanged();
    emit conversationSettingsChanged();
    m_countTimer.start();
}

void ChatController::setConversationSetting(const QString& key, const QVariant& value) {
    const bool unset = !value.isValid() || value.isNull();
    bool number = true;
    if (!unset && kNumberSettings.contains(key)) value.toString().toDouble(&number);
    if (!number) return setError(tr("%1 must be a number, not \"%2\"").arg(key, value.toString()));
    if (!unset && key == "contextPolicy" && !kPolicies.contains(value.toString()))
        return setError(tr("Unknown context policy \"%1\" (expected dropOldest, rollingWindow "
                           "or stop)")
                            .arg(value.toString()));
    if (!kNumberSettings.contains(key) &&
        !QStringList{"model", "systemPrompt", "contextPolicy"}.contains(key))
        return setError(tr("Unknown conversation setting \"%1\"").arg(key));
    QVariantMap s = m_convSettings;
    if (unset)
        s.remove(key);
    else
        s.insert(key, value);
    if (s == m_convSettings) return;
    if (m_conversationId != 0 && !m_store->setConversationSettings(m_conversationId, s))
        return setError(m_store->lastError());
    m_convSettings = s;
    emit conversationSettingsChanged();
    m_countTimer.start();
}

EngineSampling ChatController::effectiveSampling() const {
    EngineSampling s = m_settings->sampling();
    const QVariantMap& o = m_convSettings;
    if (o.contains("temperature")) s.temperature = o.value("temperature").toFloat();
    if (o.contains("topK")) s.topK = o.value("topK").toInt();
    if (o.contains("topP")) s.topP = o.value("topP").toFloat();
    if (o.contains("minP")) s.minP = o.value("minP").toFloat();
    if (o.contains("repeatPenalty")) s.repeatPenalty = o.value("repeatPenalty").toFloat();
    if (o.contains("maxTokens")) s.maxTokens = o.value("maxTokens").toInt();
    const QString policy = o.value("contextPolicy").toString();
    s.contextPolicy = policy == "stop"            ? ContextPolicy::Stop
                      : policy == "rollingWindow" ? ContextPolicy::RollingWindow
                                                  : ContextPolicy::DropOldest;
    s.thinking = m_thinking;
    return s;
}

QString ChatController::effectiveSystemPrompt() const {
    // Set for the conversation, even empty (no system prompt), it replaces the app's.
    return (m_convSettings.contains("systemPrompt")
                ? m_convSettings.value("systemPrompt").toString()
                : m_settings->systemPrompt())
        .trimmed();
}

QString ChatController::settingsSummary() const {
    QStringList parts;
    if (const QString model = m_convSettings.value("model").toString(); !model.isEmpty())
        parts << QFileInfo(model).fileName();
    if (m_convSettings.contains("systemPrompt")) parts << tr("own system prompt");
    for (const QString& key : kNumberSettings)
        if (m_convSettings.contains(key)) parts << key + " " + m_convSettings.value(key).toString();
    const QString policy = m_convSettings.value("contextPolicy").toString();
    parts << (policy == "stop"            ? tr("stops when the context is full")
              : policy == "rollingWindow" ? tr("rolling window")
                                          : tr("drops the oldest turns when full"));
    return parts.join(QStringLiteral(" · "));
}

void ChatController::setDraft(const QString& text) {
    if (text == m_draft) return;
    m_draft = text;
    m_countTimer.start();
}

void ChatController::countTokens() {
    if (!m_inference->modelLoaded()) {
        m_contextTokens = -1;
        emit contextTokensChanged();
        return;
    }
    QList<ChatTurn> turns = promptTurns(storedBranch(), false);
    if (!m_draft.trimmed().isEmpty()) turns.append({"user", m_draft.trimmed()});
    m_inference->countTokens(turns, effectiveSampling());
}

void ChatController::useConversationModel() {
    const QString model = m_convSettings.value("model").toString();
    if (model.isEmpty() || !m_inference->modelLoaded() || m_inference->loading() ||
        m_inference->generating() || model == m_inference->modelPath())
        return;
    if (!QFileInfo::exists(model)) {
        return addInfo(
            tr("This conversation's model %1 is no longer there; %2 answers instead.")
                .arg(QFileInfo(model).fileName(), QFileInfo(m_inference->modelPath()).fileName()));
    }
    m_inference->loadModel(m_settings->loadOptions(model));
}

void ChatController::setThinking(bool thinking) {
    if (thinking == m_thinking) return;
    m_thinking = thinking;
    if (m_conversationId != 0 && !m_store->setThinking(m_conversationId, thinking))
        setError(m_store->lastError());
    emit thinkingChanged();
}

void ChatController::finishShown(qint64 id, const QString& text, bool complete) {
    m_messages.finishLast(id, text, complete);
    const int ms = m_messages.at(m_messages.count() - 1).reasoningMs;
    if (id != 0 && ms > 0 && !m_store->setReasoningMs(id, ms)) setError(m_store->lastError());
}

void ChatController::selectConversation(qint64 id) {
    if (id == m_conversationId) return;
    const ConversationSummary c = m_store->conversation(id);
    if (c.id == 0) return setError(tr("Conversation %1 no longer exists").arg(id));
    m_conversationId = c.id;
    m_title = c.title;
    m_thinking = m_store->thinking(c.id);
    m_convSettings = m_store->conversationSettings(c.id);
    emit thinkingChanged();
    emit conversationSettingsChanged();
    m_settings->setLastConversationId(c.id);
    QList<StoredMessage> stored = m_store->messages(id);
    // A response still running for another conversation keeps going into the store.
    if (m_responding && m_responseConversation == id) {
        // Its row as saved so far is shown as the streaming one instead.
        stored.removeIf([this](const StoredMessage& m) { return m.id == m_responseMessageId; });
        m_messages.reset(stored);
        StoredMessage streaming{0, "assistant", m_partial, false, QDateTime::currentDateTime()};
        streaming.parentId = m_responseParent;
        m_messages.append(streaming, true);
    } else {
        m_messages.reset(stored);
    }
    emit currentConversationChanged();
    useConversationModel();
    m_countTimer.start();
}

void ChatController::renameConversation(qint64 id, const QString& title) {
    const QString t = title.trimmed();
    if (t.isEmpty()) return;
    if (!m_store->renameConversation(id, t)) return setError(m_store->lastError());
    if (id == m_conversationId) {
        m_title = t;
        emit currentConversationChanged();
    }
    refreshList();
}

void ChatController::deleteConversation(qint64 id) {
    if (m_responding && m_responseConversation == id) {
        m_responseConversation = 0;
        m_inference->stop();
    }
    if (!m_store->deleteConversation(id)) return setError(m_store->lastError());
    if (id == m_conversationId) newConversation();
    refreshList();
}

bool ChatController::send(const QString& text) {
    const QString content = text.trimmed();
    if (content.isEmpty() || m_responding) return false;
    if (!m_inference->modelLoaded()) {
        setError(tr("Load a model first (Model menu)."));
        return false;
    }
    if (m_conversationId == 0) {
        QString title = content.simplified().left(48);
        if (content.simplified().size() > 48) title += QStringLiteral("…");
        m_conversationId = m_store->createConversation(title);
        if (m_conversationId == 0) {
            setError(m_store->lastError());
            return false;
        }
        m_title = title;
        if (!m_thinking) m_store->setThinking(m_conversationId, false);
        // The conversation keeps the model it was started with, and the settings set for it.
        if (!m_convSettings.contains("model")) {
            m_convSettings.insert("model", m_inference->modelPath());
            emit conversationSettingsChanged();
        }
        if (!m_store->setConversationSettings(m_conversationId, m_convSettings))
            setError(m_store->lastError());
        m_settings->setLastConversationId(m_conversationId);
        emit currentConversationChanged();
    }
    // The new message follows the last one stored on the branch the conversation is on.
    const QList<StoredMessage> branch = storedBranch();
    return sendAfter(branch.isEmpty() ? 0 : branch.last().id, content);
}

bool ChatController::sendAfter(qint64 parent, const QString& content) {
    const qint64 id = m_store->appendMessage(m_conversationId, "user", content, true, parent);
    if (id == 0) {
        setError(m_store->lastError());
        return false;
    }
    refreshList();
    // The store made the message the selected version: the branch ends with it.
    const QList<StoredMessage> branch = storedBranch();
    if (branch.isEmpty() || branch.last().id != id) {
        // Stored (so the input box may clear), but not answered: Regenerate answers it.
        showBranch(branch);
        setError(tr("The message was stored, but the conversation could not be read back: %1")
                     .arg(m_store->lastError()));
        return true;
    }
    startResponse(branch);
    m_sentMessageId = m_responding ? id : 0;
    return true;
}

QList<StoredMessage> ChatController::storedBranch() const {
    return m_conversationId == 0 ? QList<StoredMessage>() : m_store->messages(m_conversationId);
}

void ChatController::showBranch(const QList<StoredMessage>& branch) {
    int same = 0;
    while (same < m_messages.count() && same < branch.size()) {
        const StoredMessage& shown = m_messages.at(same);
        const StoredMessage& stored = branch[same];
        if (m_messages.rowIsStreaming(same) || shown.id != stored.id ||
            shown.content != stored.content || shown.complete != stored.complete ||
            shown.version != stored.version || shown.versions != stored.versions)
            break;
        ++same;
    }
    if (same < m_messages.count()) m_messages.removeFrom(same);
    for (int i = same; i < branch.size(); ++i) m_messages.append(branch[i]);
}

QList<ChatTurn> ChatController::promptTurns(const QList<StoredMessage>& branch,
                                            bool continueLast) const {
    QList<ChatTurn> turns;
    const QString system = effectiveSystemPrompt();
    if (!system.isEmpty()) turns.append({"system", system});
    for (int i = 0; i < branch.size(); ++i) {
        const StoredMessage& m = branch[i];
        // Earlier replies' reasoning stays out of the prompt, as reasoning models' templates
        // expect; a reply being continued keeps it (the model goes on from where it stopped).
        const bool continued = continueLast && i == branch.size() - 1;
        turns.append({m.role, m.role == "assistant" && !continued
                                  ? reasoning::withoutReasoning(m.content)
                                  : m.content});
    }
    return turns;
}

void ChatController::startResponse(const QList<StoredMessage>& branch, bool continueLast,
                                   int version) {
    const QList<ChatTurn> turns = promptTurns(branch, continueLast);
    EngineSampling sampling = effectiveSampling();
    sampling.continueLast = continueLast;
    // A continued reply keeps its stored row and grows it; a new one gets a row on its first text.
    const StoredMessage last = continueLast ? branch.last() : StoredMessage{};
    const qint64 parent = continueLast ? last.parentId : branch.isEmpty() ? 0 : branch.last().id;
    // The view shows what the reply follows, then the reply.
    showBranch(branch);
    if (continueLast) {
        m_messages.resumeLast();
    } else {
        StoredMessage reply{0, "assistant", {}, false, QDateTime::currentDateTime()};
        reply.parentId = parent;
        reply.version = reply.versions = version;
        m_messages.append(reply, true);
    }
    if (m_inference->generate(turns, sampling) == 0) {
        showBranch(storedBranch());  // the conversation as it was
        return setError(tr("The model is busy or not loaded."));
    }
    m_responding = true;
    m_responseConversation = m_conversationId;
    m_responseMessageId = last.id;
    m_responseParent = parent;
    m_prefix = last.content;
    m_partial = m_saved = m_prefix;
    m_sentMessageId = 0;
    m_saveTimer.start();
}

void ChatController::onTextReady(const QString& text) {
    if (!m_responding) return;
    m_partial += text;
    m_sentMessageId = 0;
    // The reply is in the store from its first text on, then saved every kSaveIntervalMs.
    if (m_responseMessageId == 0) savePartial();
    if (m_responseConversation == m_conversationId && m_messages.lastIsStreaming())
        m_messages.appendText(text);
}

void ChatController::savePartial() {
    if (!m_responding || m_responseConversation == 0 || m_partial == m_saved) return;
    if (m_responseMessageId == 0) {
        m_responseMessageId = m_store->appendMessage(m_responseConversation, "assistant", m_partial,
                                                     false, m_responseParent);
        if (m_responseMessageId == 0) return setError(m_store->lastError());
    } else if (!m_store->updateMessage(m_responseMessageId, m_partial, false)) {
        return setError(m_store->lastError());
    }
    m_saved = m_partial;
}

qint64 ChatController::saveResponse(qint64 conv, const QString& text, bool complete) {
    m_saveTimer.stop();
    qint64 id = m_responseMessageId;
    m_responseMessageId = 0;
    m_saved.clear();
    m_prefix.clear();
    if (conv == 0) return 0;  // its conversation was deleted
    if (text.isEmpty() && !complete) {
        // Nothing was generated: no empty reply is left behind.
        if (id != 0 && !m_store->deleteMessagesFrom(conv, id)) setError(m_store->lastError());
        return 0;
    }
    if (id == 0) {
        id = m_store->appendMessage(conv, "assistant", text, complete, m_responseParent);
        if (id == 0) setError(m_store->lastError());
    } else if (!m_store->updateMessage(id, text, complete)) {
        setError(m_store->lastError());
    }
    return id;
}

void ChatController::onFinished(const QString& newText, const GenerationStats& stats) {
    if (!m_responding) return;  // already saved by saveInterrupted()
    m_responding = false;
    const qint64 conv = m_responseConversation;
    m_responseConversation = 0;
    const QString text = m_prefix + newText;
    // A reply stopped by the user, at the token limit or at a full context can be continued.
    const bool complete =
        stats.stopReason == StopReason::None || stats.stopReason == StopReason::EndOfText;
    const qint64 id = saveResponse(conv, text, complete);
    if (conv == 0) return;  // its conversation was deleted
    const MessageDetails details{
        m_inference->modelLoaded() ? QFileInfo(m_inference->modelPath()).fileName() : QString(),
        stats.generatedTokens, stats.tokensPerSecond, stats.timeToFirstTokenMs,
        StopReason::name(stats.stopReason)};
    if (id != 0 && !m_store->setDetails(id, details)) setError(m_store->lastError());
    if (conv == m_conversationId && m_messages.lastIsStreaming()) {
        finishShown(id, text, complete);
        m_messages.setLastDetails(details);
    }
    refreshList();
    if (stats.templateFallback && !m_templateNoticeShown) {
        m_templateNoticeShown = true;
        addInfo(tr("This model has no usable chat template; using ChatML."));
    }
    if (const int dropped = stats.droppedMessages; dropped > 0)
        addInfo(tr("%n older message(s) were left out to fit the context.", nullptr, dropped));
    if (stats.systemPromptDropped)
        addInfo(
            tr("The system prompt was left out too (this conversation keeps a rolling "
               "window)."));
    m_countTimer.start();
    if (stats.stopReason == StopReason::ContextFull)
        addInfo(tr("The context is full; start a new conversation or raise the context length."));
    emit responseFinished(text);
}

void ChatController::onFailed(const QString& message, const QString& partial, const QString& code) {
    if (!m_responding) return;
    m_responding = false;
    const qint64 conv = m_responseConversation;
    m_responseConversation = 0;
    const qint64 sent = std::exchange(m_sentMessageId, 0);
    // The model never saw the message: it does not fit, or the conversation is full and its
    // policy is to stop.
    const bool unseen = code == "app.prompt_too_long" || code == "app.context_full";
    if (unseen && sent != 0 && partial.isEmpty() && m_prefix.isEmpty())
        return takeBackUnsent(conv, sent, message);
    const bool current = conv == m_conversationId && m_messages.lastIsStreaming();
    const QString text = m_prefix + partial;
    const qint64 id = saveResponse(conv, text, false);
    if (current && id != 0)
        finishShown(id, text, false);
    else if (current)
        m_messages.removeFrom(m_messages.count() - 1);
    setError(tr("Generation failed: %1").arg(message));
    emit responseFailed(message);
}

void ChatController::takeBackUnsent(qint64 conv, qint64 messageId, const QString& message) {
    // The model never saw the message: it is not kept (each retry would add another unanswered
    // one); its text goes back to the input box.
    saveResponse(conv, {}, false);
    const bool current = conv == m_conversationId;
    QString text;
    if (current && m_messages.lastIsStreaming()) m_messages.removeFrom(m_messages.count() - 1);
    if (current && m_messages.count() > 0 &&
        m_messages.at(m_messages.count() - 1).id == messageId) {
        text = m_messages.at(m_messages.count() - 1).content;
        m_messages.removeFrom(m_messages.count() - 1);
    }
    if (conv != 0 && !m_store->deleteMessagesFrom(conv, messageId)) setError(m_store->lastError());
    // A conversation made for this message alone goes too.
    if (conv != 0 && m_store->messages(conv).isEmpty() && m_store->deleteConversation(conv) &&
        current) {
        newConversation();
    }
    refreshList();
    setError(tr("The message was not sent: %1").arg(message));
    if (!text.isEmpty()) emit messageNotSent(text);
    emit responseFailed(message);
}

void ChatController::stop() {
    m_inference->stop();
}

void ChatController::regenerate() {
    if (m_responding) return;
    QList<StoredMessage> branch = storedBranch();
    if (branch.isEmpty()) return;
    const qsizetype last = branch.size() - 1;
    const bool answered = branch[last].role == "assistant";
    if (answered && (last == 0 || branch[last - 1].role != "user")) return;
    if (!answered && branch[last].role != "user") return;
    if (!m_inference->modelLoaded()) return setError(tr("Load a model first (Model menu)."));
    // The answer stays stored as a version; the new one follows the question beside it.
    int version = 1;
    if (answered) {
        version = branch[last].versions + 1;
        branch.removeLast();
    }
    startResponse(branch, false, version);
}

void ChatController::continueResponse() {
    if (m_responding) return;
    const QList<StoredMessage> branch = storedBranch();
    if (branch.isEmpty()) return;
    const StoredMessage& last = branch.last();
    // An unanswered message gets its answer; a complete answer has nothing to continue.
    if (last.role == "user") return regenerate();
    if (last.role != "assistant" || last.complete) return;
    if (!m_inference->modelLoaded()) return setError(tr("Load a model first (Model menu)."));
    startResponse(branch, true);
}

void ChatController::editAndResend(int row, const QString& text) {
    if (m_responding || row < 0 || row >= m_messages.count()) return;
    if (m_messages.at(row).role != "user" || text.trimmed().isEmpty()) return;
    if (!m_inference->modelLoaded()) return setError(tr("Load a model first (Model menu)."));
    // The row names the message; what it follows is the store's.
    const QList<StoredMessage> branch = storedBranch();
    const qint64 id = m_messages.at(row).id;
    const auto old = std::find_if(branch.begin(), branch.end(),
                                  [id](const StoredMessage& m) { return m.id == id; });
    if (old == branch.end()) return showBranch(branch);
    // The old version and what followed it stay stored; the edit is a new version beside it.
    sendAfter(old->parentId, text.trimmed());
}

void ChatController::switchVersion(int row, int step) {
    if (row < 0 || row >= m_messages.count() || step == 0) return;
    if (m_responding && m_responseConversation == m_conversationId) return;
    const QList<qint64> ids = m_store->versions(m_messages.at(row).id);
    const int to = static_cast<int>(ids.indexOf(m_messages.at(row).id)) + step;
    if (to < 0 || to >= ids.size()) return;
    if (!m_store->selectVersion(ids[to])) return setError(m_store->lastError());
    // The view follows the store: the chosen version and what follows it.
    showBranch(storedBranch());
    m_countTimer.start();
}

void ChatController::copyText(const QString& text) {
    if (auto* clipboard = QGuiApplication::clipboard()) clipboard->setText(text);
}

bool ChatController::exportConversation(const QUrl& file, const QString& format) {
    if (m_conversationId == 0) {
        setError(tr("Nothing to export yet."));
        return false;
    }
    const QString path = file.isLocalFile() ? file.toLocalFile() : file.toString();
    // What the answers came from: the model and the conversation's settings of now.
    const EngineSampling s = effectiveSampling();
    // Floats as the user typed them (0.8, not 0.800000011920929).
    auto decimal = [](float v) { return QString::number(v).toDouble(); };
    const QVariantMap sampling{{"temperature", decimal(s.temperature)},
                               {"top_k", s.topK},
                               {"top_p", decimal(s.topP)},
                               {"min_p", decimal(s.minP)},
                               {"repeat_penalty", decimal(s.repeatPenalty)},
                               {"max_tokens", s.maxTokens}};
    const QString model =
        m_inference->modelLoaded() ? QFileInfo(m_inference->modelPath()).fileName() : QString();
    const QVariantMap settings{
        {"model", model}, {"systemPrompt", effectiveSystemPrompt()}, {"sampling", sampling}};
    if (!m_store->exportToFile(m_conversationId, path, format, settings)) {
        setError(m_store->lastError());
        return false;
    }
    addInfo(tr("Exported to %1").arg(path));
    return true;
}

QUrl ChatController::suggestedExportFile(const QString& format) const {
    QString base = m_title.isEmpty() ? QStringLiteral("conversation") : m_title;
    base.replace(QRegularExpression(R"([\\/:*?"<>|\n])"), "_");
    const QString dir = ConversationStore::defaultExportFolder();
    return QUrl::fromLocalFile(dir + "/" + base + (format == "json" ? ".json" : ".md"));
}

void ChatController::loadModel(const QUrl& file) {
    if (!file.isLocalFile())
        return setError(tr("Not a local model file: %1").arg(file.toDisplayString()));
    loadModelFile(file.toLocalFile());
}

void ChatController::loadModelFile(const QString& path) {
    if (!QFileInfo::exists(path)) return setError(tr("Model file not found: %1").arg(path));
    dismissError();
    m_inference->loadModel(m_settings->loadOptions(path));
}

void ChatController::reloadModel() {
    if (m_inference->modelLoaded()) loadModel(QUrl::fromLocalFile(m_inference->modelPath()));
}

void ChatController::onModelChanged() {
    if (!m_inference->modelLoaded()) return;
    m_settings->setLastModelPath(m_inference->modelPath());
    // The open conversation goes on with the model chosen now.
    if (m_conversationId != 0 && !m_responding)
        setConversationSetting("model", m_inference->modelPath());
    m_templateNoticeShown = false;
    if (!m_inference->fallbackReason().isEmpty())
        addInfo(tr("Running on %1: %2").arg(m_inference->backend(), m_inference->fallbackReason()));
}

void ChatController::saveInterrupted() {
    if (!m_responding) return;
    m_responding = false;
    m_inference->stop();
    const qint64 conv = m_responseConversation;
    m_responseConversation = 0;
    // Text generated after the last batch reached this thread is lost; everything shown is kept.
    const qint64 id = saveResponse(conv, m_partial, false);
    if (id != 0 && conv == m_conversationId && m_messages.lastIsStreaming())
        finishShown(id, m_partial, false);
}

void ChatController::setError(const QString& message, const QString& details) {
    m_error = message;
    m_errorDetails = details;
    emit errorMessageChanged();
}

void ChatController::addInfo(const QString& message) {
    // One notice per cause: the same notice again (each send that drops turns) is not repeated.
    if (m_info.split('\n').contains(message)) return;
    m_info = m_info.isEmpty() ? message : m_info + "\n" + message;
    emit infoMessageChanged();
}

void ChatController::dismissError() {
    if (m_error.isEmpty()) return;
    m_error.clear();
    m_errorDetails.clear();
    emit errorMessageChanged();
}

void ChatController::dismissInfo() {
    if (m_info.isEmpty()) return;
    m_info.clear();
    emit infoMessageChanged();
}
