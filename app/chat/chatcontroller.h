// What the chat UI calls: conversations, sending, stopping, regenerating, editing, exporting.
// Ties the conversation store, the message models, the settings and the inference controller.
#pragma once

#include <QtQml/qqmlregistration.h>
#include <QObject>
#include <QTimer>
#include <QUrl>

#include "conversationlistmodel.h"
#include "conversationstore.h"
#include "inferencecontroller.h"
#include "messagemodel.h"
#include "settings.h"

class ChatController : public QObject {
    Q_OBJECT
    QML_ELEMENT
    QML_UNCREATABLE("made by main.cpp")
    Q_PROPERTY(MessageModel* messages READ messages CONSTANT)
    Q_PROPERTY(ConversationListModel* conversations READ conversations CONSTANT)
    Q_PROPERTY(
        qint64 currentConversationId READ currentConversationId NOTIFY currentConversationChanged)
    Q_PROPERTY(QString currentTitle READ currentTitle NOTIFY currentConversationChanged)
    Q_PROPERTY(QString searchText READ searchText WRITE setSearchText NOTIFY searchTextChanged)
    Q_PROPERTY(bool generating READ generating NOTIFY generatingChanged)
    Q_PROPERTY(QString errorMessage READ errorMessage NOTIFY errorMessageChanged)
    // The technical message behind the error, for its Details toggle (may be empty).
    Q_PROPERTY(QString errorDetails READ errorDetails NOTIFY errorMessageChanged)
    Q_PROPERTY(QString infoMessage READ infoMessage NOTIFY infoMessageChanged)
    // The conversation's "think" switch, stored with it (new conversations: on); shown where
    // the model's template takes enable_thinking (thinkingSwitch).
    Q_PROPERTY(bool thinking READ thinking WRITE setThinking NOTIFY thinkingChanged)
    Q_PROPERTY(bool thinkingSwitch READ thinkingSwitch NOTIFY thinkingSwitchChanged)
    // The conversation's own settings (keys: model, systemPrompt, temperature, topK, topP, minP,
    // repeatPenalty, maxTokens, and contextPolicy: "dropOldest", "rollingWindow" or "stop");
    // what it does not set comes from the app's settings. A new conversation has none.
    Q_PROPERTY(QVariantMap conversationSettings READ conversationSettings NOTIFY
                   conversationSettingsChanged)
    // Those settings in a line, for the conversation's header.
    Q_PROPERTY(QString settingsSummary READ settingsSummary NOTIFY conversationSettingsChanged)
    // The conversation with the message being typed, in tokens (-1: not counted), against the
    // context's length.
    Q_PROPERTY(int contextTokens READ contextTokens NOTIFY contextTokensChanged)
    Q_PROPERTY(int contextLength READ contextLength NOTIFY contextTokensChanged)

public:
    // clock: times the reasoning of streamed replies (MessageModel's; a test may inject one).
    ChatController(ConversationStore* store, InferenceController* inference, Settings* settings,
                   QObject* parent = nullptr, MessageModel::Clock clock = {});
    ~ChatController() override;

    MessageModel* messages() { return &m_messages; }
    ConversationListModel* conversations() { return &m_conversations; }
    qint64 currentConversationId() const { return m_conversationId; }
    QString currentTitle() const { return m_title; }
    QString searchText() const { return m_search; }
    void setSearchText(const QString& text);
    bool generating() const { return m_inference->generating(); }
    QString errorMessage() const { return m_error; }
    QString errorDetails() const { return m_errorDetails; }
    QString infoMessage() const { return m_info; }
    bool thinking() const { return m_thinking; }
    void setThinking(bool thinking);
    bool thinkingSwitch() const { return m_inference->thinkingSwitch(); }
    QVariantMap conversationSettings() const { return m_convSettings; }
    QString settingsSummary() const;
    int contextTokens() const { return m_contextTokens; }
    int contextLength() const { return m_inference->contextLength(); }
    // What the engine gets: the app's settings with the conversation's own on top.
    EngineSampling effectiveSampling() const;
    QString effectiveSystemPrompt() const;

    // Sets one of the conversation's settings; an undefined value goes back to the default.
    Q_INVOKABLE void setConversationSetting(const QString& key, const QVariant& value);
    // The message being typed, for the token counter (counted a moment after typing stops).
    Q_INVOKABLE void setDraft(const QString& text);

    Q_INVOKABLE void newConversation();
    Q_INVOKABLE void selectConversation(qint64 id);
    Q_INVOKABLE void renameConversation(qint64 id, const QString& title);
    Q_INVOKABLE void deleteConversation(qint64 id);
    // True once the message is stored (the input box may then be cleared); false, with the
    // error shown, when it was not (no model, the database could not be written: a full disk).
    Q_INVOKABLE bool send(const QString& text);
    Q_INVOKABLE void stop();
    // A new version of the last answer; the previous ones are kept (switchVersion).
    Q_INVOKABLE void regenerate();
    // Generates more after the last message when it is an answer that was stopped, cut at the
    // token limit or interrupted.
    Q_INVOKABLE void continueResponse();
    // A new version of the user message at `row`, answered; the conversation that followed the
    // old version is kept as that version's branch.
    Q_INVOKABLE void editAndResend(int row, const QString& text);
    // Shows the previous (step -1) or next (+1) version of the message at `row`, with the
    // messages that follow that version.
    Q_INVOKABLE void switchVersion(int row, int step);
    Q_INVOKABLE void copyText(const QString& text);
    Q_INVOKABLE bool exportConversation(const QUrl& file, const QString& format);
    // Documents/<title>.md or .json, for the export dialog.
    Q_INVOKABLE QUrl suggestedExportFile(const QString& format) const;
    // A file dialog's URL; QML that has a path passes it to loadModelFile, never "file://" + path
    // (a '#' or '%' in the name would be read as URL syntax).
    Q_INVOKABLE void loadModel(const QUrl& file);
    Q_INVOKABLE void loadModelFile(const QString& path);
    Q_INVOKABLE void reloadModel();
    Q_INVOKABLE void dismissError();
    Q_INVOKABLE void dismissInfo();

    // Saves a response still being generated with what it has (on quit).
    void saveInterrupted();
    // A reply being generated is saved (marked incomplete) at least this often, so that a
    // crash or a power cut loses at most this much of it.
    static constexpr int kSaveIntervalMs = 1000;
    // Shows a message in the error banner.
    void setError(const QString& message, const QString& details = {});

signals:
    void currentConversationChanged();
    void searchTextChanged();
    void generatingChanged();
    void errorMessageChanged();
    void infoMessageChanged();
    void thinkingChanged();
    void thinkingSwitchChanged();
    void conversationSettingsChanged();
    void contextTokensChanged();
    // A response was completed and saved (also when stopped).
    void responseFinished(const QString& text);
    void responseFailed(const QString& message);
    // A message was taken back because the model never saw it (it does not fit the context):
    // the input box gets its text again.
    void messageNotSent(const QString& text);

private:
    // Answers the last message of `branch` (the reply is the parent's `version`-th), or continues
    // it when it is an answer.
    void startResponse(const QList<StoredMessage>& branch, bool continueLast = false,
                       int version = 1);
    // Writes the running reply's text so far to the store (incomplete); no-op when unchanged.
    void savePartial();
    // Ends the running reply's stored row: the final text, or deletes it when there is none.
    qint64 saveResponse(qint64 conv, const QString& text, bool complete);
    // Stores and shows the user message as the newest reply to `parent`, then answers it.
    bool sendAfter(qint64 parent, const QString& content);
    void onTextReady(const QString& text);
    void onFinished(const QString& text, const GenerationStats& stats);
    void onFailed(const QString& message, const QString& partial, const QString& code);
    void onModelChanged();
    void addInfo(const QString& message);
    void takeBackUnsent(qint64 conv, qint64 messageId, const QString& message);
    // Marks the streaming last row done and stores how long its reasoning took.
    void finishShown(qint64 id, const QString& text, bool complete);
    void refreshList();
    // The open conversation as stored: from its first message, the selected version of each
    // (empty for a conversation not stored yet). The prompt is built from this, never from the
    // view, so that what the model sees is what a restart or an export shows.
    QList<StoredMessage> storedBranch() const;
    // Makes the view show `branch`: the rows it already shows unchanged stay.
    void showBranch(const QList<StoredMessage>& branch);
    // The conversation as the engine gets it: the system prompt, then `branch` (the reply being
    // continued last).
    QList<ChatTurn> promptTurns(const QList<StoredMessage>& branch, bool continueLast) const;
    void countTokens();
    // Loads the conversation's model when another one is loaded.
    void useConversationModel();

    ConversationStore* m_store;
    InferenceController* m_inference;
    Settings* m_settings;
    MessageModel m_messages;
    ConversationListModel m_conversations;
    qint64 m_conversationId = 0;
    qint64 m_responseConversation = 0;  // where the running response goes; 0 = discard
    bool m_responding = false;
    bool m_templateNoticeShown = false;
    bool m_thinking = true;
    QString m_partial;               // text of the running response so far
    QString m_saved;                 // what the store holds of it
    QString m_prefix;                // the text a continued reply already had
    qint64 m_responseMessageId = 0;  // its row in the store; 0 until its first text
    qint64 m_responseParent = 0;     // the message it answers
    qint64 m_sentMessageId = 0;      // the user message just sent, until the reply starts
    QTimer m_saveTimer;
    QTimer m_countTimer;  // the token count waits until typing pauses
    QVariantMap m_convSettings;
    QString m_draft;
    int m_contextTokens = -1;
    QString m_title, m_search, m_error, m_errorDetails, m_info;
};
