pragma ComponentBehavior: Bound
import QtQuick
import QtQuick.Controls
import QtQuick.Controls.Material
import Ember

// A message's text in its bubble: the reasoning's header (the reasoning shows while it runs and
// folds away when the answer starts; a click on the header shows it again), the Markdown blocks,
// and why a reply stopped short.
Rectangle {
    id: root
    property bool isUser: false
    property string content
    property bool streaming: false
    property bool complete: true
    property string stopReason
    property MessageBlocks blocks: null
    property int reasoningMs: 0
    property int fontSize: 14
    property ListView view: null  // the list the message is in
    property real originY: 0  // this bubble's top in the view's content
    // The unwrapped width of a user's text, to fit a short message's bubble to it (laying out a
    // long reply would cost as much as drawing it).
    readonly property real textWidth: measure.implicitWidth
    readonly property bool thinking: blocks ? blocks.thinking : false
    onThinkingChanged: reasoningHeader.expanded = thinking

    implicitHeight: segments.implicitHeight + 20
    radius: 10
    color: isUser ? theme.alpha(Material.accent, 0.14) : theme.assistantBubble
    Theme { id: theme; dark: root.Material.theme === Material.Dark }

    Text {
        id: measure
        visible: false
        text: root.isUser ? root.content : ""
        font.pixelSize: root.fontSize
    }

    Column {
        id: segments
        x: 14
        y: 10
        width: root.width - 28
        spacing: 8
        ReasoningHeader {
            id: reasoningHeader
            visible: root.blocks ? root.blocks.hasReasoning : false
            thinking: root.thinking
            durationMs: root.reasoningMs
            expanded: root.thinking
            fontSize: root.fontSize
        }
        MarkdownBlocks {
            id: blockArea
            width: segments.width
            blocks: root.blocks
            reasoningVisible: reasoningHeader.expanded
            linkColor: theme.link
            fontSize: root.fontSize
            spacing: segments.spacing
            view: root.view
            originY: root.originY + segments.y + blockArea.y
        }
        Label {
            visible: root.streaming && root.content.length === 0
            text: qsTr("Thinking…")
            color: Material.hintTextColor
        }
        Label {
            objectName: "stoppedLabel"
            visible: !root.complete && !root.streaming && !root.isUser
            text: root.stopReason === "max_tokens" ? qsTr("(stopped at the token limit)")
                : root.stopReason === "cancelled" || root.stopReason === "callback" ? qsTr("(stopped)")
                : root.stopReason === "context_full" ? qsTr("(stopped: the context is full)")
                : qsTr("(incomplete)")
            color: Material.hintTextColor
            font.italic: true
        }
    }
}
