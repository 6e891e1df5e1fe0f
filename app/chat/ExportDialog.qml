import QtQuick
import QtQuick.Dialogs
import Ember

// Saves the open conversation as Markdown or JSON: a Save dialog that opens in the folder of
// the suggested file (the documents folder if there is one, else home) with that name filled
// in.
FileDialog {
    id: root
    required property ChatController chat
    property string format: "markdown"

    function ask(f) {
        format = f
        const file = String(root.chat.suggestedExportFile(f))
        currentFolder = file.substring(0, file.lastIndexOf("/"))
        selectedFile = file
        open()
    }

    title: format === "json" ? qsTr("Export conversation as JSON") : qsTr("Export conversation as Markdown")
    fileMode: FileDialog.SaveFile
    acceptLabel: qsTr("Save")
    defaultSuffix: format === "json" ? "json" : "md"
    nameFilters: format === "json" ? [qsTr("JSON (*.json)")] : [qsTr("Markdown (*.md)")]
    onAccepted: root.chat.exportConversation(selectedFile, format)
}
