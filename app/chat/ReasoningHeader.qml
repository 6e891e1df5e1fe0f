import QtQuick
import QtQuick.Controls
import QtQuick.Controls.Material

// The header of a reply's reasoning: "Thinking…" while it runs, then "Thought for 12 s"; a click
// shows or hides the reasoning.
ToolButton {
    id: root
    property bool thinking: false
    property int durationMs: 0
    property bool expanded: false
    property int fontSize: 14

    objectName: "reasoningHeader"
    flat: true
    padding: 2
    font.pixelSize: fontSize - 1
    font.italic: true
    text: (expanded ? "\u25be " : "\u25b8 ") + (thinking ? qsTr("Thinking…")
          : durationMs > 0 ? qsTr("Thought for %1 s").arg(Math.max(1, Math.round(durationMs / 1000)))
          : qsTr("Reasoning"))
    Material.foreground: Material.hintTextColor
    onClicked: expanded = !expanded
}
