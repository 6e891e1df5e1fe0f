import QtQuick
import QtQuick.Controls
import Ember

// The window's actions with their keyboard shortcuts, shared by the menus. Escape stops a
// generation (popups and dialogs take Escape first while open); Ctrl+, opens the settings.
// `chat` needs: generating, currentConversationId, stop(), regenerate(), newConversation();
// `inference` needs: modelLoaded.
Item {
    id: root
    property ChatController chat
    property InferenceController inference
    property bool haveModels: false
    signal openModelRequested()
    signal manageModelsRequested()
    signal exportRequested(string format)
    signal settingsRequested()

    readonly property Action newConversation: Action {
        text: qsTr("&New conversation"); shortcut: "Ctrl+N"
        onTriggered: root.chat.newConversation()
    }
    readonly property Action openModel: Action {
        text: qsTr("&Open model…"); shortcut: "Ctrl+O"
        onTriggered: root.openModelRequested()
    }
    readonly property Action manageModels: Action {
        text: qsTr("&Models…"); shortcut: "Ctrl+M"; enabled: root.haveModels
        onTriggered: root.manageModelsRequested()
    }
    readonly property Action exportMarkdown: Action {
        text: qsTr("Export as &Markdown…")
        enabled: !!root.chat && root.chat.currentConversationId > 0
        onTriggered: root.exportRequested("markdown")
    }
    readonly property Action exportJson: Action {
        text: qsTr("Export as &JSON…")
        enabled: !!root.chat && root.chat.currentConversationId > 0
        onTriggered: root.exportRequested("json")
    }
    readonly property Action quit: Action {
        text: qsTr("&Quit"); shortcut: "Ctrl+Q"
        onTriggered: Qt.quit()
    }
    readonly property Action settings: Action {
        text: qsTr("&Settings…"); shortcut: "Ctrl+,"
        onTriggered: root.settingsRequested()
    }
    readonly property Action stop: Action {
        objectName: "stopAction"
        text: qsTr("&Stop"); shortcut: "Esc"
        enabled: !!root.chat && root.chat.generating
        onTriggered: root.chat.stop()
    }
    readonly property Action regenerate: Action {
        text: qsTr("&Regenerate"); shortcut: "Ctrl+R"
        enabled: !!root.chat && !root.chat.generating && !!root.inference && root.inference.modelLoaded
        onTriggered: root.chat.regenerate()
    }
}
