// The values that cross the worker thread (InferenceWorker -> InferenceController -> chat,
// performance monitor): typed gadgets, so a reader cannot misspell a key or a type.
#pragma once

#include <QtQml/qqmlregistration.h>
#include <QObject>
#include <QString>
#include <string>

// Why a reply stopped. The conversation store keeps the engine's name of it ("eog", ...).
namespace StopReason {
Q_NAMESPACE
QML_ELEMENT
enum Value {
    None,         // no reply yet, or a name this version does not know
    EndOfText,    // "eog": the model ended its turn
    MaxTokens,    // "max_tokens": the reply reached its token limit
    Cancelled,    // "cancelled": the user stopped it
    ContextFull,  // "context_full": the conversation filled the context
    Callback,     // "callback": the engine's callback stopped it
};
Q_ENUM_NS(Value)

// The engine's name of a reason ("" for None) and back (None for an unknown name).
QString name(Value reason);
Value fromName(const std::string& name);
}  // namespace StopReason

// The figures of one finished reply.
struct GenerationStats {
    Q_GADGET
    Q_PROPERTY(int promptTokens MEMBER promptTokens)
    Q_PROPERTY(int evaluatedTokens MEMBER evaluatedTokens)
    Q_PROPERTY(int generatedTokens MEMBER generatedTokens)
    Q_PROPERTY(int droppedMessages MEMBER droppedMessages)
    Q_PROPERTY(bool systemPromptDropped MEMBER systemPromptDropped)
    Q_PROPERTY(double tokensPerSecond MEMBER tokensPerSecond)
    Q_PROPERTY(double timeToFirstTokenMs MEMBER timeToFirstTokenMs)
    Q_PROPERTY(double promptMs MEMBER promptMs)
    Q_PROPERTY(int contextUsed MEMBER contextUsed)
    Q_PROPERTY(bool templateFallback MEMBER templateFallback)
    Q_PROPERTY(StopReason::Value stopReason MEMBER stopReason)

public:
    int promptTokens = 0;     // the whole prompt
    int evaluatedTokens = 0;  // of which evaluated (the rest came from the cache)
    int generatedTokens = 0;
    int droppedMessages = 0;  // left out by the context policy
    bool systemPromptDropped = false;
    double tokensPerSecond = 0;
    double timeToFirstTokenMs = 0;
    double promptMs = 0;
    int contextUsed = 0;            // tokens in the context after the reply
    bool templateFallback = false;  // the model's chat template could not be used
    StopReason::Value stopReason = StopReason::None;
};

// What the worker loaded.
struct LoadedModel {
    Q_GADGET
    Q_PROPERTY(QString modelName MEMBER modelName)
    Q_PROPERTY(QString path MEMBER path)
    Q_PROPERTY(QString backend MEMBER backend)
    Q_PROPERTY(QString device MEMBER device)
    Q_PROPERTY(QString fallbackReason MEMBER fallbackReason)
    Q_PROPERTY(int contextLength MEMBER contextLength)
    Q_PROPERTY(int threads MEMBER threads)
    Q_PROPERTY(bool thinkingSwitch MEMBER thinkingSwitch)

public:
    QString modelName;       // from the file's metadata; may be empty
    QString path;            // the file loaded (the previous one again after a failed switch)
    QString backend;         // "vulkan" or "cpu"
    QString device;          // the GPU's or the CPU's name
    QString fallbackReason;  // why the GPU was not used, if it was not
    int contextLength = 0;
    int threads = 0;
    bool thinkingSwitch = false;  // the template takes enable_thinking
};
